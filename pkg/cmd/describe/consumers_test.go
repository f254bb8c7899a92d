package describe

import (
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func TestDescribeConsumers_ShowsGrantsLimitsAndBindingsByNamespace(t *testing.T) {
	five := int32(5)
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db"},
		Spec:       v1alpha1.ServiceInstanceSpec{SharedWith: []string{"team-b", "team-c"}, MaxBindings: &five},
		Status:     v1alpha1.ServiceInstanceStatus{Consumers: make([]v1alpha1.ConsumerReservation, 3)},
	}
	others := []*v1alpha1.ServiceBinding{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "web"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "api"}},
	}
	got := DescribeConsumers(inst, []string{"db"}, others, []string{"team-c"})
	assert.Equal(t, got, `Consumers:
  Shared with:      team-b, team-c
  Allowed:          its own namespace and every namespace it is shared with
  Max bindings:     5 (3 taken)
  Bindings:
    team-a: db
    team-b: api, web
  Not listed:       team-c (you may not list the bindings there)
`)
	assert.Equal(t, DescribeConsumers(&v1alpha1.ServiceInstance{}, []string{"db"}, nil, nil), "", "nothing for an instance neither shared nor limited")
}
