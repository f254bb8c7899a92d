package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
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
	return append(fs, identity(ctx, c)), true
}

// identity says who the user is to the API server.
func identity(ctx context.Context, c *Config) Finding {
	ssr, err := c.Core.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return Finding{Object: "identity", Severity: Warn, Detail: fmt.Sprintf("cannot tell who you are (SelfSubjectReview): %v", err),
			Fix: "brokers receive no originating identity; allow create on selfsubjectreviews.authentication.k8s.io (Kubernetes 1.28 and later allow it to everyone by default)"}
	}
	u := ssr.Status.UserInfo
	detail := "user " + u.Username
	if len(u.Groups) > 0 {
		detail += " (groups " + strings.Join(u.Groups, ", ") + ")"
	}
	return Finding{Object: "identity", Severity: OK, Detail: detail}
}

// RBAC asks, for the current and the catalog namespace, whether the user may make each
// request of install.Permissions (what "kubectl catalog reconcile" does), and says what
// each denied permission breaks.
func RBAC(ctx context.Context, c *Config) []Finding {
	var fs []Finding
	for _, ns := range c.namespaces() {
		fs = append(fs, rbacIn(ctx, c, ns))
	}
	return fs
}

// rbacIn is the rbac finding of namespace ns.
func rbacIn(ctx context.Context, c *Config, ns string) Finding {
	var denied, breaks, errs []string
	severe := false
	for _, p := range install.Permissions {
		missing, perrs := missingOf(ctx, c, ns, p)
		errs = append(errs, perrs...)
		if len(missing) > 0 {
			denied = append(denied, missing...)
			breaks = append(breaks, p.Why)
			if slices.Contains(p.Resources, "configmaps") {
				severe = true
			}
		}
	}
	name := "rbac " + ns
	switch {
	case len(errs) > 0 && len(denied) == 0:
		return Finding{Object: name, Severity: Warn, Detail: "cannot check permissions: " + errs[0],
			Fix: "ask an administrator whether SelfSubjectAccessReviews are allowed"}
	case len(denied) == 0:
		return Finding{Object: name, Severity: OK, Detail: "you may do everything reconcile does here"}
	}
	sev := Warn
	if severe {
		sev = Fail
	}
	return Finding{Object: name, Severity: sev,
		Detail: "denied: " + strings.Join(denied, ", ") + "; so: " + strings.Join(slices.Compact(breaks), "; "),
		Fix:    fmt.Sprintf("ask an administrator for these permissions in namespace %q, or let reconcile run in the cluster with its own (kubectl catalog reconcile install --dry-run=client -o yaml shows the role)", ns)}
}

// missingOf are the requests of permission p the user may not make in namespace ns
// ("verb resource.group"), and the errors of the reviews that could not be asked.
func missingOf(ctx context.Context, c *Config, ns string, p install.Permission) (missing, errs []string) {
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
