package authority

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// The cross-namespace rule, case by case: which bindings count as consumers of instance
// a/db, and which unreadable ConfigMaps do.
func TestCounts_TheCrossNamespaceRule(t *testing.T) {
	held := func(b *v1alpha1.ServiceBinding) { b.Status.Retired = []string{"junk"} }
	for _, tc := range []struct {
		name   string
		inst   func(*v1alpha1.ServiceInstance)
		ns     string
		names  string // the instance's namespace the binding names; "a" when empty
		status func(*v1alpha1.ServiceBinding)
		want   bool
	}{
		{name: "own namespace", ns: "a", want: true},
		{name: "own namespace, outside the allowed list", ns: "a", inst: func(i *v1alpha1.ServiceInstance) { i.Spec.AllowedNamespaces = []string{"b"} }, want: true},
		{name: "never granted", ns: "b"},
		{name: "never granted, a status saying the broker holds it", ns: "b", status: held},
		{name: "shared now", ns: "b", inst: func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{"b"} }, want: true},
		{name: "shared now, outside the allowed list, held", ns: "b", status: held, want: true,
			inst: func(i *v1alpha1.ServiceInstance) {
				i.Spec.SharedWith, i.Spec.AllowedNamespaces = []string{"b"}, []string{"c"}
			}},
		{name: "shared now, outside the allowed list, not held", ns: "b",
			inst: func(i *v1alpha1.ServiceInstance) {
				i.Spec.SharedWith, i.Spec.AllowedNamespaces = []string{"b"}, []string{"c"}
			}},
		{name: "shared before, held", ns: "b", status: held, want: true, inst: func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{"b"} }},
		{name: "shared before, not held", ns: "b", inst: func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{"b"} }},
		{name: "a place among its consumers, held", ns: "b", status: held, want: true,
			inst: func(i *v1alpha1.ServiceInstance) {
				i.Status.Consumers = []v1alpha1.ConsumerReservation{{Namespace: "b", Name: "x"}}
			}},
		{name: "another namespace's instance of the same name", ns: "b", names: "c", status: held,
			inst: func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{"b"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db"}}
			if tc.inst != nil {
				tc.inst(inst)
			}
			names := tc.names
			if names == "" {
				names = "a"
			}
			b := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "app"},
				Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", InstanceNamespace: names}}
			if tc.status != nil {
				tc.status(b)
			}
			assert.Equal(t, Counts(inst, b), tc.want)
			// An unreadable ConfigMap of the namespace counts where a grant was ever given,
			// and only with the catalog's finalizer.
			assert.Equal(t, CountsUnreadable(inst, tc.ns, false), false)
			assert.Equal(t, CountsUnreadable(inst, tc.ns, true), GrantedBefore(inst, tc.ns))
		})
	}
}

func TestUnownedIDs_AreTheStatusIdsARecordDoesNotOwn(t *testing.T) {
	b := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "app", UID: "u-1"},
		Spec: v1alpha1.ServiceBindingSpec{ExternalID: "named-by-spec"}}
	own := v1alpha1.NewNamespaceBoundID("b")
	other := v1alpha1.NewNamespaceBoundID("c")
	key := v1alpha1.NamespaceKey{ClusterID: "cluster-1", UID: "ns-uid-b"}
	ownKeyed := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "b", key)
	otherKeyed := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "b", v1alpha1.NamespaceKey{ClusterID: "cluster-1", UID: "ns-uid-of-an-earlier-b"})
	auth := New(func() Env {
		return Env{Platform: keysOf{cluster: key.ClusterID, uids: map[string]string{"b": string(key.UID)}}}
	})
	assert.DeepEqual(t, auth.UnownedIDs(context.Background(), b, []string{"named-by-spec", own, "", "junk", other, ownKeyed, otherKeyed, "junk"}),
		[]string{"junk", other, otherKeyed})
	// A namespace whose key cannot be read keeps every bound id it cannot tell apart.
	unreadable := New(func() Env { return Env{Platform: keysOf{cluster: key.ClusterID, err: errors.New("forbidden")}} })
	assert.DeepEqual(t, unreadable.UnownedIDs(context.Background(), b, []string{"junk", ownKeyed, otherKeyed}), []string{"junk"})
	// An id the spec names is the call's to refuse, not the status's to forget.
	b.Spec.ExternalID = otherKeyed
	assert.DeepEqual(t, auth.UnownedIDs(context.Background(), b, []string{otherKeyed, "junk"}), []string{"junk"})
	assert.Assert(t, NotReached(b) != nil)
}

// keysOf is a platform that tells namespaces' keys.
type keysOf struct {
	cluster string
	uids    map[string]string
	err     error
}

func (keysOf) Identity(context.Context) (*osb.OriginatingIdentity, error) { return nil, nil }
func (k keysOf) ClusterID(context.Context) (string, error)                { return k.cluster, nil }
func (k keysOf) NamespaceUID(_ context.Context, ns string) (string, error) {
	return k.uids[ns], k.err
}
