// Package rbac implements "kubectl catalog rbac": ready ClusterRoles for the
// people who use the catalog.
package rbac

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

var rbacLong = cmdutil.LongDesc(`
	Print, or apply, ClusterRoles for the people who use the catalog.

	  - kubectl-catalog-viewer: read records (get, describe, graph,
	    marketplace), and the workloads, Pods and Events that graph and
	    describe show beside them. Aggregated into the built-in "view" role;
	    it holds no Secret.
	  - kubectl-catalog-user: work with instances and bindings in a
	    namespace: records; the namespace's Secrets (parameters from Secrets
	    and namespaced broker credentials are read, binding credentials are
	    written; none is listed); the workloads a binding is projected into
	    (read, and updated by the projection), Pods and Events (read, and
	    Events written about the records); SelfSubjectReviews. Aggregated
	    into the built-in "edit" role (and so "admin").
	  - kubectl-catalog-admin: register cluster brokers, curate access rules
	    and sync catalogs, in the catalog namespace: records, and reading the
	    brokers' credentials Secrets.

	Bind kubectl-catalog-user with a RoleBinding in each namespace, named
	after the user (kubectl-catalog-user-NAME: one per user), plus
	kubectl-catalog-viewer with a RoleBinding in the catalog namespace (the
	marketplace of cluster brokers). Bind kubectl-catalog-admin with a
	RoleBinding in the catalog namespace, plus kubectl-catalog-viewer with a
	ClusterRoleBinding (deregister and sync look for a broker's instances in
	every namespace). Users get no Secret of the catalog namespace: the
	broker calls they cannot make are recorded and left to reconcile, which
	sends them when it next runs (the schedule of its CronJob, or at once
	with "reconcile install --serve"). The printed YAML opens with these
	commands.

	By default the roles are printed as YAML (-o json for a List). --apply
	creates or updates them with server-side apply (field manager
	"kubectl-catalog"); with -o it prints them as the API server stored them.`)

var rbacExample = cmdutil.Examples(`
	# Review the roles and how to bind them
	kubectl catalog rbac

	# Create or update them in the cluster
	kubectl catalog rbac --apply

	# Let alice provision and bind in namespace dev
	kubectl create rolebinding kubectl-catalog-user-alice --clusterrole kubectl-catalog-user --user alice -n dev
	kubectl create rolebinding kubectl-catalog-viewer-alice --clusterrole kubectl-catalog-viewer --user alice -n catalog-system`)

// Options are the options of rbac.
type Options struct {
	Apply bool
	// Output is -o: yaml (the default) or json; without it, --apply prints a line per role.
	Output *printers.OutputFlags

	CatalogNamespace string
	Core             kubernetes.Interface
	Streams          cmdutil.IOStreams
}

// NewCmdRBAC returns the rbac command.
func NewCmdRBAC(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: newOutputFlags()}
	cmd := &cobra.Command{
		Use:               "rbac [--apply] [-o yaml|json]",
		Short:             "Print or apply ClusterRoles for catalog viewers, users and admins",
		Long:              rbacLong,
		Example:           rbacExample,
		Args:              cmdutil.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              cmdutil.RunE(f, o, nil),
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.Apply, "apply", false, "Create or update the ClusterRoles in the cluster (server-side apply).")
	o.Output.AddFlags(cmd)
	return cmd
}

// newOutputFlags is rbac's -o: yaml or json; without it, yaml, or a line per role with --apply.
func newOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags([]string{"yaml", "json"}, "", "Output format. One of: (yaml, json); default yaml, or a line per role with --apply.", func(format string) error {
		return cmdutil.UsageErrorf("--output %q: use yaml or json", format)
	})
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if o.Output == nil {
		return nil
	}
	return o.Output.Validate()
}

// Complete builds the client when the roles are applied.
func (o *Options) Complete(f *cmdutil.Factory) error {
	o.CatalogNamespace = f.CatalogNamespace
	if !o.Apply {
		return nil
	}
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	o.Core = core
	return nil
}

// Names of the ClusterRoles.
const (
	ViewerRole = install.ViewerRole
	UserRole   = install.UserRole
	AdminRole  = install.AdminRole
)

// Roles are the ClusterRoles of "kubectl catalog rbac", in order: viewer, user, admin.
func Roles() []*rbacv1.ClusterRole { return install.CatalogRoles() }

// Header is the comment that opens the printed roles: how to bind them, with
// catalogNamespace in the commands.
func Header(catalogNamespace string) string { return install.RolesHeader(catalogNamespace) }

// Run prints or applies the roles.
func (o *Options) Run(ctx context.Context) error {
	roles := Roles()
	var objs []map[string]any
	if !o.Apply {
		for _, r := range roles {
			objs = append(objs, install.Clean(r))
		}
		return o.write(objs)
	}
	for _, r := range roles {
		res, err := install.ApplyObject(ctx, o.Core, r, false)
		if err != nil {
			return err
		}
		if o.Output.Format() == "" {
			fmt.Fprintln(o.Streams.Out, res.String())
		}
		objs = append(objs, install.CleanServed(res.Object))
	}
	if o.Output.Format() != "" {
		return o.write(objs)
	}
	fmt.Fprintf(o.Streams.ErrOut, "bind them: see \"kubectl catalog rbac\" (the comment at the top) or docs/security.md\n")
	return nil
}

func (o *Options) write(objs []map[string]any) error {
	if o.Output.Format() == "json" {
		return install.WriteJSON(o.Streams.Out, objs)
	}
	ns := o.CatalogNamespace
	if ns == "" {
		ns = cmdutil.DefaultCatalogNamespace
	}
	fmt.Fprint(o.Streams.Out, Header(ns))
	return install.WriteYAML(o.Streams.Out, objs)
}
