package reconcile

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// secretParameters creates an instance whose parameters come from Secret "root": with
// no trust policy its author cannot be verified, so reading the Secret needs the rights
// of the user running reconcile.
func (f *fixture) secretParameters(name string) {
	f.t.Helper()
	ctx := context.Background()
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root"},
		Data:       map[string][]byte{"password": []byte("hunter2")},
	}, metav1.CreateOptions{})
	assert.NilError(f.t, err)
	_, err = f.st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerN, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: "osb-" + name,
			ParametersFrom: []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "root"}}}},
	})
	assert.NilError(f.t, err)
}

func TestRun_UnverifiedAuthor_RefusedUnlessTheUserTrustsIt(t *testing.T) {
	f := newFixture(t)
	f.secretParameters("db")
	sum := f.run(Options{})
	assert.Equal(t, f.item(sum, "db").Outcome, Refused, "%+v", f.item(sum, "db"))
	assert.Equal(t, len(f.broker.Calls()), 0, "nothing is sent for a refused record")

	f = newFixture(t)
	f.secretParameters("db")
	sum = f.run(Options{TrustUnverifiedAuthors: true})
	assert.Equal(t, f.item(sum, "db").Outcome, Done, "%+v", f.item(sum, "db"))
}

// The records a person was shown and agreed to are acted on with their rights; one
// written after the question is refused all the same.
func TestRun_UnverifiedAuthor_TheRecordsAgreedToOnly(t *testing.T) {
	f := newFixture(t)
	f.secretParameters("db")
	us, err := f.rec.Unvouched(context.Background(), Options{Namespace: ns})
	assert.NilError(t, err)
	assert.Equal(t, len(us), 1)
	assert.Equal(t, us[0].Name, "db")
	_, err = f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerN, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: "osb-later",
			ParametersFrom: []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "root"}}}},
	})
	assert.NilError(t, err)

	sum := f.run(Options{TrustRecords: us})
	assert.Equal(t, f.item(sum, "db").Outcome, Done, "%+v", f.item(sum, "db"))
	assert.Equal(t, f.item(sum, "later").Outcome, Refused, "%+v", f.item(sum, "later"))
}
