package install

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names of the ClusterRoles of "kubectl catalog rbac": the roles docs/security.md gives
// the people who use the catalog.
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
	readRecords  = roleRule("", []string{"configmaps"}, "get", "list", "watch")
	writeRecords = roleRule("", []string{"configmaps"}, "get", "list", "watch", "create", "update", "patch", "delete")
	// The namespace's uid goes into the OSB context (its name otherwise).
	getNamespace = roleRule("", []string{"namespaces"}, "get")
	// Who is calling: the originating identity sent to brokers. Effective
	// only cluster-wide; every authenticated user has it by default.
	selfReview = roleRule("authentication.k8s.io", []string{"selfsubjectreviews"}, "create")
	// graph and "describe instance" show who uses what: the workloads a
	// binding's Secret is projected into (and the Pods running them); describe
	// shows the Events about a record. Read only: no Secret among them.
	readWorkloads = []rbacv1.PolicyRule{
		roleRule("apps", []string{"deployments", "statefulsets", "daemonsets"}, "get", "list", "watch"),
		roleRule("batch", []string{"cronjobs", "jobs"}, "get", "list", "watch"),
		roleRule("", []string{"pods"}, "get", "list", "watch"),
	}
	readEvents = []rbacv1.PolicyRule{
		roleRule("events.k8s.io", []string{"events"}, "get", "list", "watch"),
		roleRule("", []string{"events"}, "get", "list", "watch"),
	}
)

func roleRule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

// CatalogRoles are the ClusterRoles of "kubectl catalog rbac", in order: viewer,
// user, admin. Each holds what the verbs of its audience request, and nothing
// more.
func CatalogRoles() []*rbacv1.ClusterRole {
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
		// get, describe, graph, marketplace: records, and the workloads and
		// Events that describe and graph show beside them. Aggregated into the
		// built-in "view", which must never read Secrets: this role has none.
		role(ViewerRole, AggregateToView, slices.Concat([]rbacv1.PolicyRule{readRecords}, readWorkloads, readEvents)...),
		// provision, update, deprovision, bind, unbind, namespaced brokers:
		// records; Secrets of the namespace (parameters from Secrets,
		// namespaced broker credentials read; binding credentials written,
		// never listed); workloads a binding is projected into; Events about
		// the records. Aggregated
		// into the built-in "edit" (and so "admin"), which may do all this
		// already.
		// graph and describe read the workloads and Events as the viewer does.
		role(UserRole, AggregateToEdit,
			writeRecords,
			roleRule("", []string{"secrets"}, "get", "create", "update", "delete"),
			getNamespace,
			roleRule("apps", []string{"deployments", "statefulsets", "daemonsets"}, "get", "list", "watch", "update"),
			roleRule("batch", []string{"cronjobs", "jobs"}, "get", "list", "watch", "update"),
			roleRule("", []string{"pods"}, "get", "list", "watch"),
			selfReview,
			// Events about the records the verbs drive (without create and
			// patch, none), and read by describe.
			roleRule("events.k8s.io", []string{"events"}, "get", "list", "watch", "create", "patch"),
			roleRule("", []string{"events"}, "get", "list", "watch"),
		),
		// register, deregister, sync, access, in the catalog namespace:
		// brokers, classes, plan schemas and access rules are ConfigMaps
		// there; the brokers' credentials Secrets are read for every catalog
		// fetch. Not aggregated: it is meant for the catalog namespace only.
		role(AdminRole, "",
			writeRecords,
			roleRule("", []string{"secrets"}, "get"),
			getNamespace,
			selfReview,
		),
	}
}

// RoleBindingCommand is the command, as docs/security.md and RolesHeader give it, that
// binds ClusterRole role to user in namespace ns with a RoleBinding named after the
// role and the user ("kubectl-catalog-user-alice"), so that each user of a namespace
// has a binding of their own. A ServiceAccount's user name
// (system:serviceaccount:NS:NAME) is bound with --serviceaccount; an empty user is NAME.
func RoleBindingCommand(role, user, ns string) string {
	subject, name := "--user "+cmpOrName(user), cmpOrName(user)
	if sa, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if saNS, saName, ok := strings.Cut(sa, ":"); ok {
			subject, name = "--serviceaccount "+saNS+":"+saName, saName
		}
	}
	return fmt.Sprintf("kubectl create rolebinding %s-%s --clusterrole %s %s -n %s", role, name, role, subject, ns)
}

func cmpOrName(user string) string {
	if user == "" {
		return "NAME"
	}
	return user
}

// RolesHeader is the comment that opens the printed roles: how to bind them, with
// catalogNamespace in the commands.
func RolesHeader(catalogNamespace string) string {
	lines := []string{
		"ClusterRoles of kubectl catalog (kubectl catalog rbac). Bind them as follows.",
		"",
		"Users, per namespace NS they work in (instances, bindings, namespaced brokers):",
		"  " + RoleBindingCommand(UserRole, "", "NS"),
		"and, to see the marketplace of cluster brokers, once in the catalog namespace:",
		"  " + RoleBindingCommand(ViewerRole, "", catalogNamespace),
		"Each RoleBinding is named after its user, so that every user of a namespace has one of their own.",
		"Users get no Secret of the catalog namespace: the broker calls they cannot make are left to reconcile,",
		"which sends them when it next runs (its CronJob's schedule, or at once with reconcile --serve).",
		"",
		"Readers (get, describe, graph): a RoleBinding to " + ViewerRole + " per namespace, or a ClusterRoleBinding for all.",
		"",
		"Catalog administrators (register cluster brokers, access rules, sync), in the catalog namespace:",
		"  " + RoleBindingCommand(AdminRole, "", catalogNamespace),
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
