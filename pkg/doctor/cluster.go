package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
)

// Cluster checks that the API server answers, and asks it who the user is; reachable is
// false when it does not answer, and then nothing else can be checked.
func Cluster(ctx context.Context, c *Config) (fs []Finding, reachable bool) {
	v, err := c.Core.Discovery().ServerVersion()
	if err != nil {
		detail := fmt.Sprintf("cannot reach the API server %s: %v", c.Server, err)
		if c.Unreachable != nil {
			detail = cmpOr(c.Unreachable(err), detail)
		}
		return []Finding{{Object: "cluster", Severity: Fail, Detail: detail,
			Fix: "check the kubeconfig's current context (kubectl config current-context) and that the cluster is up (kubectl version)"}}, false
	}
	detail := "Kubernetes " + v.GitVersion
	if c.Server != "" {
		detail += " at " + c.Server
	}
	fs = append(fs, Finding{Object: "cluster", Severity: OK, Detail: detail})
	f, user := identity(ctx, c)
	c.User = user
	return append(fs, f), true
}

// identity says who the user is to the API server.
func identity(ctx context.Context, c *Config) (Finding, string) {
	ssr, err := c.Core.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return Finding{Object: "identity", Severity: Warn, Detail: fmt.Sprintf("cannot tell who you are (SelfSubjectReview): %v", err),
			Fix: "brokers receive no originating identity; allow create on selfsubjectreviews.authentication.k8s.io (Kubernetes 1.28 and later allow it to everyone by default)"}, ""
	}
	u := ssr.Status.UserInfo
	detail := "user " + u.Username
	if len(u.Groups) > 0 {
		detail += " (groups " + strings.Join(u.Groups, ", ") + ")"
	}
	return Finding{Object: "identity", Severity: OK, Detail: detail}, u.Username
}

// RBAC judges the user against the role docs/security.md gives them (the ClusterRoles of
// "kubectl catalog rbac"): kubectl-catalog-user in the current namespace (a reader holds
// kubectl-catalog-viewer there), and kubectl-catalog-admin or kubectl-catalog-viewer in
// the catalog namespace. A permission of that role the user lacks is a failure naming
// the request and the RoleBinding that grants the role. Someone who may do everything
// "kubectl catalog reconcile" does (install.Permissions) is judged by those instead. What
// the user's role leaves to reconcile (a cluster broker's credentials, a catalog fetch) is
// no failure of theirs: one INFO line says it is reconcile's.
func RBAC(ctx context.Context, c *Config) []Finding {
	var fs []Finding
	var left []string
	for _, ns := range c.namespaces() {
		f, leaves := rbacIn(ctx, c, ns)
		fs = append(fs, f)
		for _, l := range leaves {
			if !slices.Contains(left, l) {
				left = append(left, l)
			}
		}
	}
	if len(left) > 0 {
		fs = append(fs, Finding{Object: "rbac reconcile", Severity: Info,
			Detail: "reconcile (the installed ServiceAccount; see the reconcile check) does what your role leaves to it: " + strings.Join(left, "; ")})
	}
	return fs
}

// reconcileDuties are what reconcile does that a user's role leaves to it, by the
// permission of install.Permissions the user lacks.
func reconcileDuty(p install.Permission, ns string, catalog bool) string {
	switch {
	case catalog && slices.Contains(p.Resources, "secrets"):
		return fmt.Sprintf("reads the cluster brokers' credentials in namespace %s and makes the broker calls your commands record and leave to it", ns)
	case catalog && slices.Contains(p.Resources, "configmaps"):
		return fmt.Sprintf("writes the catalog namespace %s (catalog syncs, the cluster brokers' status)", ns)
	case slices.Contains(p.Resources, "subjectaccessreviews"):
		return "checks each record's author's rights before acting in their name (SubjectAccessReviews)"
	case slices.Contains(p.Resources, "validatingadmissionpolicies"):
		return "checks that the records' trust policy is in force"
	}
	return ""
}

// rbacIn is the rbac finding of namespace ns, and what the user's role leaves to
// reconcile there.
func rbacIn(ctx context.Context, c *Config, ns string) (Finding, []string) {
	var denied, breaks, errs, leaves []string
	for _, p := range install.Permissions {
		missing, perrs := missingOf(ctx, c, ns, p.PolicyRule)
		errs = append(errs, perrs...)
		if len(missing) > 0 {
			denied = append(denied, missing...)
			breaks = append(breaks, p.Why)
			if d := reconcileDuty(p, ns, ns == c.CatalogNamespace); d != "" {
				leaves = append(leaves, d)
			}
		}
	}
	name := "rbac " + ns
	switch {
	case len(errs) > 0 && len(denied) == 0:
		return Finding{Object: name, Severity: Warn, Detail: "cannot check permissions: " + errs[0],
			Fix: "ask an administrator whether SelfSubjectAccessReviews are allowed"}, nil
	case len(denied) == 0:
		return Finding{Object: name, Severity: OK, Detail: "you may do everything reconcile does here"}, nil
	}
	if ns == c.CatalogNamespace {
		return catalogRole(ctx, c, ns), leaves
	}
	return userRole(ctx, c, ns), leaves
}

// roleOf is the ClusterRole of "kubectl catalog rbac" named name.
func roleOf(name string) []rbacv1.PolicyRule {
	for _, r := range install.CatalogRoles() {
		if r.Name == name {
			return r.Rules
		}
	}
	return nil
}

// missingOfRole are the requests of ClusterRole role the user may not make in ns.
func missingOfRole(ctx context.Context, c *Config, ns, role string) (missing, errs []string) {
	for _, rule := range roleOf(role) {
		m, e := missingOf(ctx, c, ns, rule)
		missing, errs = append(missing, m...), append(errs, e...)
	}
	return missing, errs
}

// userRole judges the user in namespace ns against kubectl-catalog-user, or
// kubectl-catalog-viewer for someone who may only read records there.
func userRole(ctx context.Context, c *Config, ns string) Finding {
	name := "rbac " + ns
	grant := fmt.Sprintf("an administrator grants it: %s (and \"kubectl catalog rbac --apply\" brings the roles up to date)", install.RoleBindingCommand(install.UserRole, c.User, ns))
	missing, errs := missingOfRole(ctx, c, ns, install.UserRole)
	switch {
	case len(missing) == 0 && len(errs) > 0:
		return Finding{Object: name, Severity: Warn, Detail: "cannot check permissions: " + errs[0],
			Fix: "ask an administrator whether SelfSubjectAccessReviews are allowed"}
	case len(missing) == 0:
		return Finding{Object: name, Severity: OK, Detail: "you hold " + install.UserRole + " here: provision, update, bind, unbind, deprovision, graph"}
	}
	viewerMissing, _ := missingOfRole(ctx, c, ns, install.ViewerRole)
	writes := slices.Contains(missing, "create configmaps")
	if len(viewerMissing) == 0 && writes {
		return Finding{Object: name, Severity: Warn,
			Detail: "you hold " + install.ViewerRole + " here: you may read the records (get, describe, graph), not provision or bind",
			Fix:    "to provision and bind here, " + grant}
	}
	return Finding{Object: name, Severity: Fail,
		Detail: fmt.Sprintf("you lack what %s grants here: denied %s", install.UserRole, strings.Join(missing, ", ")),
		Fix:    grant}
}

// catalogRole judges the user in the catalog namespace ns: an administrator holds
// kubectl-catalog-admin there, a user kubectl-catalog-viewer (the marketplace).
func catalogRole(ctx context.Context, c *Config, ns string) Finding {
	name := "rbac " + ns
	adminMissing, errs := missingOfRole(ctx, c, ns, install.AdminRole)
	if len(adminMissing) == 0 && len(errs) == 0 {
		return Finding{Object: name, Severity: OK, Detail: "you hold " + install.AdminRole + " here: register, deregister, sync, access"}
	}
	viewerMissing, verrs := missingOfRole(ctx, c, ns, install.ViewerRole)
	switch {
	case len(viewerMissing) == 0 && len(verrs) > 0:
		return Finding{Object: name, Severity: Warn, Detail: "cannot check permissions: " + verrs[0],
			Fix: "ask an administrator whether SelfSubjectAccessReviews are allowed"}
	case len(viewerMissing) == 0:
		return Finding{Object: name, Severity: OK,
			Detail: "you hold " + install.ViewerRole + " here, as a user: the marketplace of cluster brokers; registering them, syncing and access rules are for administrators (" + install.AdminRole + ")"}
	}
	return Finding{Object: name, Severity: Fail,
		Detail: fmt.Sprintf("you lack what %s grants in the catalog namespace (the marketplace of cluster brokers): denied %s", install.ViewerRole, strings.Join(viewerMissing, ", ")),
		Fix:    fmt.Sprintf("an administrator grants it: %s (and \"kubectl catalog rbac --apply\" brings the roles up to date)", install.RoleBindingCommand(install.ViewerRole, c.User, ns))}
}

// missingOf are the requests of rule p the user may not make in namespace ns
// ("verb resource.group"), and the errors of the reviews that could not be asked.
func missingOf(ctx context.Context, c *Config, ns string, p rbacv1.PolicyRule) (missing, errs []string) {
	for _, group := range p.APIGroups {
		for _, res := range p.Resources {
			for _, verb := range p.Verbs {
				attrs := &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: res}
				switch res {
				case "namespaces":
					attrs.Name = ns
				case "selfsubjectreviews", "subjectaccessreviews", "validatingadmissionpolicies", "validatingadmissionpolicybindings":
					attrs.Namespace = ""
				}
				if len(p.ResourceNames) > 0 {
					attrs.Name = p.ResourceNames[0]
				}
				ok, err := allowed(ctx, c, attrs)
				if err != nil {
					errs = append(errs, err.Error())
					continue
				}
				if !ok {
					missing = append(missing, verb+" "+qualified(res, group))
				}
			}
		}
	}
	return missing, errs
}

func qualified(resource, group string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

func allowed(ctx context.Context, c *Config, attrs *authzv1.ResourceAttributes) (bool, error) {
	sar, err := c.Core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
