package describe

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// binding is a binding of instance team-a/db in namespace ns; bound says the broker
// holds it.
func binding(ns, name string, bound bool) *v1alpha1.ServiceBinding {
	b := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)}}
	b.Spec.InstanceName = "db"
	if ns != "team-a" {
		b.Spec.InstanceNamespace = "team-a"
	}
	if bound {
		b.Status.Bound = &v1alpha1.BoundState{BindingID: "id-" + name}
	}
	return b
}

func place(ns, name string) v1alpha1.ConsumerReservation {
	return v1alpha1.ConsumerReservation{Namespace: ns, Name: name, UID: ns + "-" + name}
}

func TestDescribeConsumers_ShowsGrantsLimitsAndBindingsByNamespace(t *testing.T) {
	five := int32(5)
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db"},
		Spec:       v1alpha1.ServiceInstanceSpec{SharedWith: []string{"team-b", "team-c"}, MaxBindings: &five},
		Status:     v1alpha1.ServiceInstanceStatus{Consumers: []v1alpha1.ConsumerReservation{place("team-a", "db"), place("team-b", "web"), place("team-c", "far")}},
	}
	others := []*v1alpha1.ServiceBinding{binding("team-b", "web", true), binding("team-b", "api", false)}
	got := DescribeConsumers(inst, []*v1alpha1.ServiceBinding{binding("team-a", "db", true)}, others, []string{"team-c"})
	assert.Equal(t, got, `Consumers:
  Shared with:      team-b, team-c
  Allowed:          its own namespace and every namespace it is shared with
  Max bindings:     5 (at least 3 taken)
  Bindings:
    team-a: db
    team-b: api, web
  Not listed:       team-c (you may not list the bindings there)
`)
	assert.Equal(t, DescribeConsumers(&v1alpha1.ServiceInstance{}, []*v1alpha1.ServiceBinding{binding("team-a", "db", true)}, nil, nil), "", "nothing for an instance neither shared nor limited")
}

// A limit set on an instance that already has bindings counts them all, from every
// namespace it lets bind, whether or not they hold a place in its status; a place whose
// binding is gone, or of a namespace no longer granted, does not count.
func TestDescribeConsumers_MaxBindings_CountsEveryBindingThatExists(t *testing.T) {
	two := int32(2)
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db"},
		Spec:       v1alpha1.ServiceInstanceSpec{SharedWith: []string{"team-b"}, MaxBindings: &two},
		Status: v1alpha1.ServiceInstanceStatus{Consumers: []v1alpha1.ConsumerReservation{
			place("team-a", "new"), place("team-a", "gone"), place("team-x", "unshared"),
		}},
	}
	own := []*v1alpha1.ServiceBinding{binding("team-a", "one", true), binding("team-a", "two", true), binding("team-a", "new", false)}
	others := []*v1alpha1.ServiceBinding{binding("team-b", "three", true)}
	got := DescribeConsumers(inst, own, others, nil)
	assert.Assert(t, is.Contains(got, "Max bindings:     2 (4 taken): more bindings than the limit, which was lowered after them; they stay, and new binds are refused until fewer than 2 remain\n"), got)

	inst.Spec.MaxBindings = new(int32)
	*inst.Spec.MaxBindings = 4
	got = DescribeConsumers(inst, own, others, nil)
	assert.Assert(t, is.Contains(got, "Max bindings:     4 (4 taken): new binds are refused\n"), got)
}
