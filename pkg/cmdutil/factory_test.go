package cmdutil

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// The stores of one factory (a verb's and its engine's) ask who the user is once, not
// once each: one SelfSubjectReview per process.
func TestFactory_StoresShareTheUsersIdentity(t *testing.T) {
	c := storetest.NewCluster()
	reviews := 0
	c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		reviews++
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: "alice"}}}, nil
	})
	f := NewFactory(IOStreams{})
	ctx := store.WithIntent(context.Background())
	for i, name := range []string{"a", "b"} {
		st := store.New(c.Core, c.Metadata, f.StoreOptions(c.Core)...)
		inst, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: storetest.UserNamespace, Name: name},
			Spec:       v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "b", ClassID: "c", PlanID: "p"},
		})
		assert.NilError(t, err)
		assert.Equal(t, inst.Annotations[store.AnnotationAuthor], "alice", "store %d", i)
	}
	assert.Equal(t, reviews, 1)
	// The options returned are the factory's own: appending to them changes nothing shared.
	_ = append(f.StoreOptions(c.Core), store.WithPageSize(1))
	assert.Equal(t, len(f.StoreOptions(c.Core)), 2)
}
