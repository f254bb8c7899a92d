package authority

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Authorizer answers whether a user may make an API request (a SubjectAccessReview).
type Authorizer interface {
	Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, string, error)
}

// KubeAuthorizer is the Authorizer of a real cluster.
type KubeAuthorizer struct{ Core kubernetes.Interface }

// Allowed asks the API server with a SubjectAccessReview.
func (a KubeAuthorizer) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	r, err := a.Core.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("cannot ask the API server what %q may do (SubjectAccessReview): %w", user, err)
	}
	return r.Status.Allowed, r.Status.Reason, nil
}

// SelfAuthorizer answers whether the user running the engine may make an API request (a
// SelfSubjectAccessReview, which every user may ask).
type SelfAuthorizer interface {
	SelfAllowed(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, string, error)
}

// SelfAllowed asks the API server with a SelfSubjectAccessReview.
func (a KubeAuthorizer) SelfAllowed(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	r, err := a.Core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("cannot ask the API server what you may do (SelfSubjectAccessReview): %w", err)
	}
	return r.Status.Allowed, r.Status.Reason, nil
}
