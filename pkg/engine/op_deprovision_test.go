package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// everyRecordAndSecret is the name and resourceVersion of every ConfigMap and Secret of
// the cluster: what an operation refused must leave as it was.
func everyRecordAndSecret(t *testing.T, c *storetest.Cluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	ctx := context.Background()
	cms, err := c.Core.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, cm := range cms.Items {
		out["configmap/"+cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	secrets, err := c.Core.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, s := range secrets.Items {
		out["secret/"+s.Namespace+"/"+s.Name] = s.ResourceVersion
	}
	return out
}

// boundFixture is instance db, provisioned, with binding app bound.
func boundFixture(t *testing.T) *fixture {
	t.Helper()
	f, _ := bindingFixture(t, nil)
	f.createBinding("app", nil)
	assert.Equal(t, f.stepBinding("app").State, StateSettled)
	f.broker.ResetCalls()
	return f
}

func TestDeprovision_UnbindsTheBindingsFirst_ThenDeprovisions(t *testing.T) {
	f := boundFixture(t)
	var notes []string
	var asked Deprovisioning
	res, err := f.engine.Deprovision(context.Background(), DeprovisionRequest{
		Namespace: ns, Name: "db", DryRun: DryRunNone,
		Follow:  Follow{Note: func(s string) { notes = append(notes, s) }},
		Confirm: func(d Deprovisioning) (bool, error) { asked = d; return true, nil },
	})
	assert.NilError(t, err)
	assert.Equal(t, asked.What, `instance "db" (db/plan-small, broker "acme") and its bindings app (their credentials Secrets too)`)
	assert.Equal(t, res.Result.State, StateDeleted, res.Result.Message)
	assert.DeepEqual(t, notes, []string{`Deprovisioning instance "db" in namespace "dev"...`, `Unbinding "app" first...`, `Binding "app" is gone.`})
	methods := f.broker.MethodNames()
	assert.Assert(t, indexOf(methods, fake.MethodUnbind) >= 0 && indexOf(methods, fake.MethodUnbind) < indexOf(methods, fake.MethodDeprovision), "%v", methods)
	_, err = f.st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
}

func TestDeprovision_RefusedOrDeclined_ChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inst    string
		shared  bool
		confirm func(Deprovisioning) (bool, error)
		want    string
	}{
		{name: "shared", inst: "db", shared: true, want: `instance "db" is shared with namespace(s) team-b, whose bindings depend on it: unshare it from each first ("kubectl catalog unshare db --from-namespace team-b --yes -n dev")`},
		{name: "not found", inst: "nope", want: `"nope"`},
		{name: "declined", inst: "db", confirm: func(Deprovisioning) (bool, error) { return false, nil }},
		{name: "cannot ask", inst: "db", confirm: func(Deprovisioning) (bool, error) { return false, errors.New("needs --yes") }, want: "needs --yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := boundFixture(t)
			if tc.shared {
				f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
			}
			before := everyRecordAndSecret(t, f.cluster)
			res, err := f.engine.Deprovision(context.Background(), DeprovisionRequest{Namespace: ns, Name: tc.inst, DryRun: DryRunNone, Confirm: tc.confirm})
			if tc.want == "" {
				assert.NilError(t, err)
				assert.Assert(t, res.Declined)
			} else {
				assert.ErrorContains(t, err, tc.want)
			}
			assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
		})
	}
}

func TestDeprovision_DryRun_ChangesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		dry     DryRun
		abandon bool
		dryRuns int
	}{
		{dry: DryRunClient},
		{dry: DryRunServer, dryRuns: 2}, // the binding's deletion, then the instance's
		{dry: DryRunServer, abandon: true, dryRuns: 2},
	} {
		t.Run(string(tc.dry), func(t *testing.T) {
			f := boundFixture(t)
			before := everyRecordAndSecret(t, f.cluster)
			res, err := f.engine.Deprovision(context.Background(), DeprovisionRequest{Namespace: ns, Name: "db", DryRun: tc.dry, Abandon: tc.abandon})
			assert.NilError(t, err)
			assert.Equal(t, res.Instance.Name, "db")
			assert.Assert(t, is.Len(res.Bindings, 1))
			assert.Assert(t, !res.Abandoned)
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
		})
	}
}

func TestDeprovision_Abandon_DropsTheRecordsWithoutTheBroker(t *testing.T) {
	f := boundFixture(t)
	res, err := f.engine.Deprovision(context.Background(), DeprovisionRequest{Namespace: ns, Name: "db", DryRun: DryRunNone, Abandon: true})
	assert.NilError(t, err)
	assert.Assert(t, res.Abandoned)
	_, err = f.st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	_, err = f.st.Bindings().Get(context.Background(), ns, "app")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

// TestDeprovision_ConsumersItMayNotList_LeavesTheDeleteToReconcile: a user who may not
// list bindings in a namespace holding a place among the instance's consumers (an
// unshare left its bindings to reconcile) does not have the instance deleted at the
// broker under them: the deletion waits, saying why, and a run that sees every namespace
// finishes it.
func TestDeprovision_ConsumersItMayNotList_LeavesTheDeleteToReconcile(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	ctx := context.Background()
	_, err := f.st.Instances().UpdateWithRetry(ctx, ns, "db", func(x *v1alpha1.ServiceInstance) error {
		x.Status.Consumers = []v1alpha1.ConsumerReservation{{Namespace: "team-b", Name: "app", UID: "u-1"}}
		return nil
	})
	assert.NilError(t, err)
	f.broker.ResetCalls()
	f.cluster.Core.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" || a.GetNamespace() == "team-b" {
			return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
		}
		return false, nil, nil
	})
	res, err := f.engine.Deprovision(ctx, DeprovisionRequest{
		Namespace: ns, Name: "db", DryRun: DryRunNone,
		Confirm: func(Deprovisioning) (bool, error) { return true, nil },
	})
	assert.NilError(t, err)
	assert.Equal(t, res.Result.State, StateWaiting, res.Result.Message)
	assert.Check(t, is.Contains(res.Result.Message, "bindings in namespace(s) team-b may still use it"))
	assert.Check(t, indexOf(f.broker.MethodNames(), fake.MethodDeprovision) < 0, "%v", f.broker.MethodNames())
	inst, err := f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.DeletionTimestamp != nil)
}

// The broker answers 500 to the unbind of the instance's binding: the deprovision does
// not say the broker is working on the instance, it fails naming the binding, why, and
// the command that finishes both (the instance stays marked for deletion, waiting).
// An unbind the broker refuses is retried too (a deletion is never given up).
func TestDeprovision_UnbindFails_SaysSoAndWhatFinishesIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   []string
	}{
		{name: "retried", status: 500, want: []string{
			`instance "db" is marked for deletion but not deprovisioned yet: the unbind of its binding "app" failed (UnbindCallFailed: `,
			`and will be retried: "kubectl catalog reconcile -n dev" unbinds it, then deprovisions the instance; see "kubectl catalog describe binding app -n dev"`,
		}},
		{name: "refused", status: 400, want: []string{
			`the unbind of its binding "app" failed (UnbindCallFailed: the broker answered 400 Bad Request: no; it is retried until the broker confirms`,
			`and will be retried: "kubectl catalog reconcile -n dev" unbinds it`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := boundFixture(t)
			f.broker.UnbindReturns(nil, &osb.HTTPStatusError{Method: "DELETE", Path: "/v2/service_instances/x/service_bindings/y", StatusCode: tc.status, Description: "no"})
			res, err := f.engine.Deprovision(context.Background(), DeprovisionRequest{
				Namespace: ns, Name: "db", DryRun: DryRunNone,
				Confirm: func(Deprovisioning) (bool, error) { return true, nil },
			})
			assert.Assert(t, err != nil, "%+v", res.Result)
			for _, w := range tc.want {
				assert.Check(t, is.Contains(err.Error(), w))
			}
			assert.Check(t, !strings.Contains(err.Error(), "working on"), err.Error())
			assert.Equal(t, res.Result.State, StateWaiting, res.Result.Message)
			assert.Check(t, indexOf(f.broker.MethodNames(), fake.MethodDeprovision) < 0, "%v", f.broker.MethodNames())
			inst, gerr := f.st.Instances().Get(context.Background(), ns, "db")
			assert.NilError(t, gerr)
			assert.Assert(t, inst.DeletionTimestamp != nil)
			b := f.getBinding("app")
			assert.Assert(t, b.DeletionTimestamp != nil)
		})
	}
}
