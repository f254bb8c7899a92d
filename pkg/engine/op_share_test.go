package engine

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// shareFixture is instance db of namespace dev, provisioned, and namespace team-b.
func shareFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	_, err := f.cluster.Core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consumerNS}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	return f
}

func TestShare_AddsTheGrantAsTheUsersIntent(t *testing.T) {
	f := shareFixture(t)
	res, err := f.engine.Share(context.Background(), ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: DryRunNone})
	assert.NilError(t, err)
	assert.DeepEqual(t, res.Instance.Spec.SharedWith, []string{consumerNS})
	inst := f.get("db")
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{consumerNS})
	assert.Assert(t, f.st.Intended(inst), "the grant is written as the user's intent")

	before := everyRecordAndSecret(t, f.cluster)
	res, err = f.engine.Share(context.Background(), ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: DryRunNone})
	assert.NilError(t, err)
	assert.Assert(t, res.AlreadyShared)
	assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
}

func TestShare_BadInput_ChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   ShareRequest
		edit  func(*v1alpha1.ServiceInstance)
		want  string
		usage bool
	}{
		{name: "own namespace", req: ShareRequest{Name: "db", To: ns}, want: "bindings of its own namespace need no grant", usage: true},
		{name: "no instance", req: ShareRequest{Name: "nope", To: consumerNS}, want: `instance "nope" not found in namespace "dev": list the instances with "kubectl catalog get instances -n dev"`},
		{name: "no namespace", req: ShareRequest{Name: "db", To: "team-z"}, want: `namespace "team-z" does not exist`},
		{name: "not allowed", req: ShareRequest{Name: "db", To: consumerNS}, edit: func(i *v1alpha1.ServiceInstance) { i.Spec.AllowedNamespaces = []string{ns} },
			want: `allows bindings only from namespaces dev, so sharing it with "team-b" would let nobody there bind`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := shareFixture(t)
			if tc.edit != nil {
				f.editInstance(tc.edit)
			}
			before := everyRecordAndSecret(t, f.cluster)
			tc.req.Namespace, tc.req.DryRun = ns, DryRunNone
			_, err := f.engine.Share(context.Background(), tc.req)
			assert.ErrorContains(t, err, tc.want)
			var input *InputError
			assert.Equal(t, errors.As(err, &input), tc.usage, "%v", err)
			assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
		})
	}
}

func TestShare_NamespaceUnreadable_SharesAndSaysItWasNotChecked(t *testing.T) {
	f := shareFixture(t)
	f.cluster.Core.PrependReactor("get", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "namespaces"}, "team-x", errors.New("no"))
	})
	res, err := f.engine.Share(context.Background(), ShareRequest{Namespace: ns, Name: "db", To: "team-x", DryRun: DryRunNone})
	assert.NilError(t, err)
	assert.Assert(t, res.NamespaceUnchecked)
	assert.DeepEqual(t, f.get("db").Spec.SharedWith, []string{"team-x"})
}

func TestShare_DryRun_WritesNothing(t *testing.T) {
	for _, tc := range []struct {
		dry     DryRun
		dryRuns int
	}{{dry: DryRunClient}, {dry: DryRunServer, dryRuns: 1}} {
		t.Run(string(tc.dry), func(t *testing.T) {
			f := shareFixture(t)
			before := everyRecordAndSecret(t, f.cluster)
			res, err := f.engine.Share(context.Background(), ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: tc.dry})
			assert.NilError(t, err)
			assert.DeepEqual(t, res.Instance.Spec.SharedWith, []string{consumerNS})
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
		})
	}
}

// sharedFixture is shareFixture with db shared with team-b, where binding app is
// recorded.
func sharedFixture(t *testing.T) *fixture {
	t.Helper()
	f := shareFixture(t)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.consumerBinding(nil, consumerNS, "app")
	return f
}

func TestUnshare_WithdrawsTheGrantThenMarksTheNamespacesBindings(t *testing.T) {
	f := sharedFixture(t)
	var asked Unsharing
	res, err := f.engine.Unshare(context.Background(), UnshareRequest{Namespace: ns, Name: "db", From: consumerNS, DryRun: DryRunNone,
		Confirm: func(u Unsharing) (bool, error) { asked = u; return true, nil }})
	assert.NilError(t, err)
	assert.DeepEqual(t, asked.Bindings, []string{"app"})
	assert.Assert(t, res.Withdrawn && !res.LeftToReconcile)
	assert.DeepEqual(t, res.Revoked, []string{consumerNS + "/app"})
	inst := f.get("db")
	assert.Assert(t, is.Len(inst.Spec.SharedWith, 0))
	assert.Assert(t, f.st.Intended(inst))
	b, err := f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	assert.Assert(t, b.DeletionTimestamp != nil)
}

func TestUnshare_RefusedDeclinedOrDryRun_ChangesNothing(t *testing.T) {
	yes := func(Unsharing) (bool, error) { return true, nil }
	for _, tc := range []struct {
		name    string
		from    string
		dry     DryRun
		confirm func(Unsharing) (bool, error)
		want    string
		dryRuns int
	}{
		{name: "not shared", from: "team-c", dry: DryRunNone, confirm: yes, want: `instance "db" is not shared with namespace "team-c" (shared with: team-b); nothing was changed`},
		{name: "declined", from: consumerNS, dry: DryRunNone, confirm: func(Unsharing) (bool, error) { return false, nil }},
		{name: "cannot ask", from: consumerNS, dry: DryRunNone, confirm: func(Unsharing) (bool, error) { return false, errors.New("needs --yes") }, want: "needs --yes"},
		{name: "client dry run", from: consumerNS, dry: DryRunClient, confirm: yes},
		{name: "server dry run", from: consumerNS, dry: DryRunServer, confirm: yes, dryRuns: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := sharedFixture(t)
			before := everyRecordAndSecret(t, f.cluster)
			res, err := f.engine.Unshare(context.Background(), UnshareRequest{Namespace: ns, Name: "db", From: tc.from, DryRun: tc.dry, Confirm: tc.confirm})
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
			} else {
				assert.NilError(t, err)
			}
			if tc.dry.Enabled() {
				assert.Assert(t, is.Len(res.Record.Spec.SharedWith, 0))
			}
			assert.Assert(t, !res.Withdrawn)
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
		})
	}
}
