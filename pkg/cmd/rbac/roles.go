package rbac

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names of the ClusterRoles.
const (
	ViewerRole = "kubectl-catalog-viewer"
	UserRole   = "kubectl-catalog-user"
	AdminRole  = "kubectl-catalog-admin"
)

// Labels that add a ClusterRole's rules to the built-in roles of the same name.
const (
	AggregateToView = "rbac.authorization.k8s.io/aggregate-to-view"
	AggregateToEdit = "rbac.authorization.k8s.io/aggregate-to-edit"
)

var (
	// records are ConfigMaps; watch serves "get -w" and waiting.
	readRecords  = rule("", []string{"configmaps"}, "get", "list", "watch")
	writeRecords = rule("", []string{"configmaps"}, "get", "list", "watch", "create", "update", "patch", "delete")
	// The namespace's uid goes into the OSB context (its name otherwise).
	getNamespace = rule("", []string{"namespaces"}, "get")
	// Who is calling: the originating identity sent to brokers. Effective
	// only cluster-wide; every authenticated user has it by default.
	selfReview = rule("authentication.k8s.io", []string{"selfsubjectreviews"}, "create")
)

func rule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

// Roles are the ClusterRoles of "kubectl catalog rbac", in order: viewer,
// user, admin. Each holds what the verbs of its audience request, and nothing
// more.
func Roles() []*rbacv1.ClusterRole {
	role := func(name string, aggregate string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		labels := map[string]string{
			"app.kubernetes.io/name":       "kubectl-catalog",
			"app.kubernetes.io/component":  "rbac",
			"app.kubernetes.io/managed-by": "kubectl-catalog",
		}
		if aggregate != "" {
			labels[aggregate] = "true"
		}
		return &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules:      rules,
		}
	}
	return []*rbacv1.ClusterRole{
		// get, describe, marketplace: records only. Aggregated into the
		// built-in "view", which must never read Secrets: this role has none.
		role(ViewerRole, AggregateToView, readRecords),
		// provision, update, deprovision, bind, unbind, namespaced brokers:
		// records; Secrets of the namespace (parameters from Secrets,
		// namespaced broker credentials read; binding credentials written,
		// never listed); workloads a binding is projected into; Events about
		// the records. Aggregated
		// into the built-in "edit" (and so "admin"), which may do all this
		// already.
		role(UserRole, AggregateToEdit,
			writeRecords,
			rule("", []string{"secrets"}, "get", "create", "update", "delete"),
			getNamespace,
			rule("apps", []string{"deployments", "statefulsets", "daemonsets"}, "get", "update"),
			rule("batch", []string{"cronjobs", "jobs"}, "get", "update"),
			selfReview,
			// Events about the records the verbs drive; without it, none.
			rule("events.k8s.io", []string{"events"}, "create", "patch"),
		),
		// register, deregister, sync, access, in the catalog namespace:
		// brokers, classes, plan schemas and access rules are ConfigMaps
		// there; the brokers' credentials Secrets are read for every catalog
		// fetch. Not aggregated: it is meant for the catalog namespace only.
		role(AdminRole, "",
			writeRecords,
			rule("", []string{"secrets"}, "get"),
			getNamespace,
			selfReview,
		),
	}
}

// Header is the comment that opens the printed roles: how to bind them, with
// catalogNamespace in the commands.
func Header(catalogNamespace string) string {
	lines := []string{
		"ClusterRoles of kubectl catalog (kubectl catalog rbac). Bind them as follows.",
		"",
		"Users, per namespace NS they work in (instances, bindings, namespaced brokers):",
		"  kubectl create rolebinding kubectl-catalog-user --clusterrole " + UserRole + " --user NAME -n NS",
		"and, to see the marketplace of cluster brokers, once in the catalog namespace:",
		"  kubectl create rolebinding kubectl-catalog-viewer-NAME --clusterrole " + ViewerRole + " --user NAME -n " + catalogNamespace,
		"Users get no Secret of the catalog namespace: the broker calls they cannot make are left to reconcile.",
		"",
		"Readers: a RoleBinding to " + ViewerRole + " per namespace, or a ClusterRoleBinding for all.",
		"",
		"Catalog administrators (register cluster brokers, access rules, sync), in the catalog namespace:",
		"  kubectl create rolebinding kubectl-catalog-admin-NAME --clusterrole " + AdminRole + " --user NAME -n " + catalogNamespace,
		"and a ClusterRoleBinding to read records everywhere (deregister and sync look for a broker's instances",
		"in every namespace):",
		"  kubectl create clusterrolebinding kubectl-catalog-admin-NAME --clusterrole " + ViewerRole + " --user NAME",
		"Do not bind " + AdminRole + " with a ClusterRoleBinding: it would read Secrets in every namespace.",
		"",
		ViewerRole + " is aggregated into the built-in view role, " + UserRole + " into edit (and so admin).",
	}
	var b strings.Builder
	for _, l := range lines {
		if l == "" {
			b.WriteString("#\n")
			continue
		}
		fmt.Fprintf(&b, "# %s\n", l)
	}
	return b.String()
}
