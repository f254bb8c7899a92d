package store_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// One process asks the API server who it is once, whoever asks (the store's author
// stamp, the engine's originating identity); a failed question is asked again.
func TestClusterUser_AskedOnceAnErrorAskedAgain(t *testing.T) {
	c := storetest.NewCluster()
	asked := 0
	c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		asked++
		if asked == 1 {
			return true, nil, apierrors.NewServiceUnavailable("starting")
		}
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: "bob", Groups: []string{"team"}}}}, nil
	})
	u := store.NewClusterUser(c.Core)
	_, err := u.UserInfo(context.Background())
	assert.ErrorContains(t, err, "cannot find out who the user is (SelfSubjectReview)")

	st := c.Store(store.WithClusterUser(u))
	_, err = st.Instances().Create(store.WithIntent(context.Background()), storetest.SampleInstance())
	assert.NilError(t, err)
	info, err := u.UserInfo(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, info.Username, "bob")
	a, _ := instanceCM(t, c)
	assert.Equal(t, a[store.AnnotationAuthor], "bob")
	assert.Equal(t, asked, 2)
}
