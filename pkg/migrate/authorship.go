package migrate

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// authorOfSecrets says why the svcat object u, whose spec makes the catalog read the
// Secrets secrets (what says how: "its parameters come from Secrets
// (spec.parametersFrom)"), is not migrated by the user running the migration; "" when
// it is.
//
// A migrated record's author is whoever writes it (with the trust policy in force the API
// server stamps the writer), and the engine reads the Secrets a spec names with its
// author's rights. The svcat object's author cannot be kept: svcat's spec.userInfo is
// not verifiable once svcat's admission is gone. Were an administrator to migrate a
// tenant's object naming a Secret the tenant may not read, the catalog would read it
// with the administrator's rights and send it to the broker, or copy it into the
// binding's Secret. So an object that makes the catalog read Secrets is migrated only by
// the user svcat recorded as its author, as its own verb would be, and only when she may
// read each of them herself (a SelfSubjectAccessReview); every other object of the
// migration goes on.
func (m *Migrator) authorOfSecrets(ctx context.Context, u *unstructured.Unstructured, secrets []string, what string) string {
	if len(secrets) == 0 {
		return ""
	}
	recorded := str(u, "spec", "userInfo", "username")
	w, err := m.cfg.Store.Writer(ctx)
	if err != nil {
		return fmt.Sprintf("cannot tell who runs the migration, so it cannot be checked against the author of its spec: %v", err)
	}
	switch {
	case recorded == "":
		return what + ", which the catalog reads with the rights of the record's author, " +
			"and svcat recorded no author for it (spec.userInfo): its owner creates it again with kubectl catalog (--external-id keeps the broker's instance or binding)"
	case w == nil || w.Username != recorded:
		return fmt.Sprintf("%s, which the catalog reads with the rights of the record's author, "+
			"and svcat recorded %q as its author: %s migrates it (kubectl catalog migrate svcat -n %s)", what, recorded, recorded, u.GetNamespace())
	}
	for _, name := range secrets {
		if why := m.mayReadSecret(ctx, u.GetNamespace(), name); why != "" {
			return fmt.Sprintf("%s: %s, so you cannot make the catalog read it in your name; whoever may read it migrates it, or you ask for get on that Secret", what, why)
		}
	}
	return ""
}

// mayReadSecret says why the user running the migration may not get Secret ns/name; ""
// when she may.
func (m *Migrator) mayReadSecret(ctx context.Context, ns, name string) string {
	review, err := m.cfg.Core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "get", Resource: "secrets", Name: name}},
	}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return fmt.Sprintf("cannot ask the API server whether you may get Secret %q: %v", name, err)
	case !review.Status.Allowed:
		reason := review.Status.Reason
		if reason == "" {
			reason = "no RBAC rule allows it"
		}
		return fmt.Sprintf("you may not get Secret %q in namespace %q (%s)", name, ns, reason)
	}
	return ""
}

// parameterSecrets are the Secrets parameters come from.
func parameterSecrets(from []v1alpha1.ParametersFromSource) []string {
	var out []string
	for _, pf := range from {
		if pf.SecretKeyRef != nil {
			out = append(out, pf.SecretKeyRef.Name)
		}
	}
	return out
}

// transformSecrets are the Secrets a binding's transforms copy keys from.
func transformSecrets(tr []v1alpha1.SecretTransform) []string {
	var out []string
	for _, t := range tr {
		if t.AddKeysFrom != nil {
			out = append(out, t.AddKeysFrom.SecretRef.Name)
		}
	}
	return out
}

// quotedList is names, each quoted, joined with ", ".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
