package doctor

import (
	"context"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

func TestRun_WithoutTheTrustPolicyItsFixComesFirst(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	fx := newFixture(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "auth"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}},
	)
	fx.addBroker(t, catalogNS, "acme", b.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "auth"}})
	fs := fx.run()
	objs := objects(fs)
	assert.Equal(t, objs[2], "trust", "right after the cluster answered: %v", objs)
	assert.Assert(t, strings.HasPrefix(fs[2].Fix, "kubectl catalog init "), fs[2].Fix)
	assert.Equal(t, slices.Index(objs[3:], "trust"), -1, "once: %v", objs)
}

func TestTrust_MissingOrStale_WarnsWithWhatToRun(t *testing.T) {
	for _, tc := range []struct {
		name         string
		objs         []runtime.Object
		wantSeverity Severity
		wantDetail   string
	}{
		{name: "in force", objs: []runtime.Object{trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t")},
			wantSeverity: OK, wantDetail: "in force"},
		{name: "not installed", wantSeverity: Warn, wantDetail: "is not installed"},
		{name: "token missing", objs: []runtime.Object{trust.Policy(), trust.Binding()},
			wantSeverity: Warn, wantDetail: "token ConfigMap catalog-system/catalog-trust is missing"},
		{name: "stale token", objs: []runtime.Object{trust.Policy(), newer(trust.Binding()), trust.TokenConfigMap(catalogNS, "t")},
			wantSeverity: Warn, wantDetail: "older than the policy or its binding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Trust(context.Background(), newFixture(t, tc.objs...).config())
			assert.Equal(t, len(fs), 1, "%+v", fs)
			f := fs[0]
			assert.Equal(t, f.Object, "trust")
			assert.Equal(t, f.Severity, tc.wantSeverity, "%+v", f)
			assert.Assert(t, is.Contains(f.Detail, tc.wantDetail))
			if tc.wantSeverity != OK {
				assert.Assert(t, is.Contains(f.Fix, "kubectl catalog init"))
			}
		})
	}
}

func newer(b *admissionv1.ValidatingAdmissionPolicyBinding) *admissionv1.ValidatingAdmissionPolicyBinding {
	b.CreationTimestamp = metav1.Now()
	return b
}

// With the trust policy in force, the namespaces holding records written before it are
// listed, each with its count and the command that adopts them.
func TestTrust_InForce_ListsTheNamespacesHoldingUnverifiedRecords(t *testing.T) {
	fx := newFixture(t, trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t"))
	ctx := store.WithIntent(context.Background())
	for _, in := range []struct{ ns, name, token string }{
		{userNS, "old-1", ""}, {userNS, "old-2", "before"}, {userNS, "new", "t"}, {"team-b", "old", ""}, {"team-c", "new", "t"},
	} {
		_, err := fx.stampedStore(in.token).Instances().Create(ctx, instance(in.ns, in.name))
		assert.NilError(t, err)
	}
	fs := Trust(context.Background(), fx.config())
	assert.DeepEqual(t, objects(fs), []string{"trust", "namespace " + userNS, "namespace team-b"})
	dev, _ := find(fs, "namespace "+userNS)
	assert.Equal(t, dev.Severity, Warn)
	assert.Assert(t, is.Contains(dev.Detail, "2 records written before the trust policy now in force"))
	assert.Assert(t, strings.HasPrefix(dev.Fix, "kubectl catalog adopt -n "+userNS+" "), dev.Fix)
	b, _ := find(fs, "namespace team-b")
	assert.Assert(t, is.Contains(b.Detail, "1 record written before"))
}
