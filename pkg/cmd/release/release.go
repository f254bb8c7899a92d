// Package release implements "kubectl catalog release": the records another cluster has
// moved in ("kubectl catalog export" here, "apply -f" there) are forgotten here without a
// broker call, once that cluster confirms it holds them (docs/moving.md).
package release

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

var releaseLong = cmdutil.LongDesc(`
	Forget, on this cluster, a namespace's instances (all, or those named) and
	their bindings that another cluster has moved in ("kubectl catalog export"
	here, "kubectl catalog apply -f" there), without calling the broker: the
	other cluster now uses them.

	The other cluster must confirm it: --confirm-with-kubeconfig (and
	--confirm-context) name it, and for every record released it must hold a
	settled record of the same namespace and name under the same OSB id,
	moved in from this cluster, its move in finished (an apply interrupted
	there is applied again first). Otherwise nothing is released. A record
	with work under way here is refused too.

	Each record is first marked released (the write-ahead); from then on no
	deprovision or unbind here, by a command, by reconcile or by the
	namespace's deletion, reaches the broker: the record is dropped instead.
	Then the records go, the bindings' Secrets and their projections into
	workloads with them. --dry-run does every check and writes nothing.`)

var releaseExample = cmdutil.Examples(`
	# See what would be released, checked against the new cluster
	kubectl catalog release -n shop --confirm-with-kubeconfig ~/.kube/config --confirm-context new --dry-run

	# Release namespace shop's services moved to the cluster of context "new"
	kubectl catalog release -n shop --confirm-with-kubeconfig ~/.kube/config --confirm-context new

	# Release one instance and its bindings
	kubectl catalog release db -n shop --confirm-with-kubeconfig new-cluster.kubeconfig`)

// Options are the options of release.
type Options struct {
	ConfirmKubeconfig string
	ConfirmContext    string
	DryRun            cmdutil.DryRunStrategy
	// Names are the instances to release; none: all of the namespace.
	Names []string

	Namespace string
	Engine    *engine.Engine
	Confirm   engine.ReleaseConfirmer
	Streams   cmdutil.IOStreams
}

// NewCmdRelease returns the release command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdRelease(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams}
	cmd := &cobra.Command{
		Use:               "release [INSTANCE...] --confirm-with-kubeconfig FILE [--confirm-context CONTEXT] [-n NAMESPACE]",
		Short:             "Forget instances and bindings another cluster has moved in, without calling the broker",
		Long:              releaseLong,
		Example:           releaseExample,
		ValidArgsFunction: complete.Instances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Names = args
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.ConfirmKubeconfig, "confirm-with-kubeconfig", "", "The kubeconfig of the cluster the services were moved to, which must hold each of them (required).")
	fs.StringVar(&o.ConfirmContext, "confirm-context", "", "The context of --confirm-with-kubeconfig to use (default: its current context).")
	_ = cmd.MarkFlagFilename("confirm-with-kubeconfig")
	cmdutil.AddDryRunFlagOffering(cmd, &o.DryRun, `"client": do every check, and write nothing.`, cmdutil.DryRunNone, cmdutil.DryRunClient)
	return cmd
}

// Validate checks the flags without I/O; it changes nothing.
func (o *Options) Validate() error {
	if !o.DryRun.Offered(cmdutil.DryRunNone, cmdutil.DryRunClient) {
		return cmdutil.UsageErrorf(`--dry-run must be "client" or "none", not %q (a server-side dry run is not offered)`, string(o.DryRun))
	}
	if o.ConfirmKubeconfig == "" {
		return cmdutil.UsageErrorf("release needs the cluster the services were moved to, to confirm it holds them: give --confirm-with-kubeconfig FILE (and --confirm-context CONTEXT); nothing was released")
	}
	return nil
}

// Complete builds the engine and the reader of the other cluster.
func (o *Options) Complete(f *cmdutil.Factory) error {
	e, ns, err := f.EngineIn(cmdutil.EngineOptions{})
	if err != nil {
		return err
	}
	o.Engine, o.Namespace = e, ns
	if o.Confirm == nil {
		other := cmdutil.NewFactory(o.Streams)
		other.ConfigFlags.KubeConfig = &o.ConfirmKubeconfig
		if o.ConfirmContext != "" {
			other.ConfigFlags.Context = &o.ConfirmContext
		}
		other.CatalogNamespace = f.CatalogNamespace
		r, err := other.Reader()
		if err != nil {
			return fmt.Errorf("the cluster to confirm with (--confirm-with-kubeconfig %s): %w", o.ConfirmKubeconfig, err)
		}
		oe, err := other.Engine(cmdutil.EngineOptions{})
		if err != nil {
			return fmt.Errorf("the cluster to confirm with (--confirm-with-kubeconfig %s): %w", o.ConfirmKubeconfig, err)
		}
		o.Confirm = &otherCluster{f: other, reader: r, eng: oe.Engine}
	}
	return nil
}

// Run releases and prints what was released.
func (o *Options) Run(ctx context.Context) error {
	res, err := o.Engine.ReleaseMoved(ctx, engine.ReleaseRequest{
		Namespace: o.Namespace, Instances: o.Names, Confirm: o.Confirm, DryRun: o.DryRun.Enabled(),
	})
	if err != nil {
		return err
	}
	verb := "released to cluster " + res.To
	if o.DryRun.Enabled() {
		verb = "would be released to cluster " + res.To + " (dry run)"
	}
	t := printers.NewTable(o.Streams.Out, "KIND", "NAMESPACE", "NAME", "ID", "RESULT")
	for _, r := range res.Released {
		t.Append(r.Kind, r.Namespace, r.Name, r.ExternalID, verb)
	}
	return t.Render()
}

// otherCluster is the cluster the records were moved to, read with the user's rights
// there.
type otherCluster struct {
	f      *cmdutil.Factory
	reader *records.Reader
	// eng reads there whether each record's move in is finished.
	eng *engine.Engine
}

// ClusterID reads the other cluster's id; it never creates one.
func (c *otherCluster) ClusterID(ctx context.Context) (string, error) {
	core, err := c.f.KubernetesClient()
	if err != nil {
		return "", err
	}
	cm, err := core.CoreV1().ConfigMaps(c.f.CatalogNamespace).Get(ctx, kube.ClusterIDConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("it has no cluster id (ConfigMap %s/%s), so it has moved nothing in: apply the export there first", c.f.CatalogNamespace, kube.ClusterIDConfigMap)
	}
	if err != nil {
		return "", err
	}
	id := cm.Data[kube.ClusterIDKey]
	if id == "" {
		return "", fmt.Errorf("its cluster id (ConfigMap %s/%s) is empty", c.f.CatalogNamespace, kube.ClusterIDConfigMap)
	}
	return id, nil
}

// Confirm checks that the other cluster holds, settled, the record of kind namespace/name
// under OSB id id, moved in from cluster from, its move in finished (an interrupted
// apply's record is not: engine.CheckMoveInFinished).
func (c *otherCluster) Confirm(ctx context.Context, kind, namespace, name, id, from string) error {
	var x interface {
		v1alpha1.Record
		OpStatus() *v1alpha1.OperationStatus
	}
	var current string
	var made bool
	switch kind {
	case v1alpha1.KindServiceInstance:
		inst, err := c.reader.Instances().Get(ctx, namespace, name)
		if err != nil {
			return confirmError(err, "instance", namespace, name)
		}
		x, current, made = inst, inst.CurrentExternalID(), inst.Status.Provisioned != nil
	default:
		b, err := c.reader.Bindings().Get(ctx, namespace, name)
		if err != nil {
			return confirmError(err, "binding", namespace, name)
		}
		x, current, made = b, b.CurrentExternalID(), b.Status.Bound != nil
	}
	st := x.OpStatus()
	switch {
	case current != id:
		return fmt.Errorf("the new cluster's record has id %s, not %s: it is another one; rename one of them", current, id)
	case engine.MovedFrom(x.GetAnnotations()) != from:
		return fmt.Errorf("the new cluster's record was not moved in from this cluster (its %s annotation says %q)", engine.AnnotationMovedFrom, engine.MovedFrom(x.GetAnnotations()))
	case x.GetDeletionTimestamp() != nil || !made || st.InFlight != nil || st.Retry != nil:
		return fmt.Errorf("the new cluster's record is not settled yet (%s): wait for it there (\"kubectl catalog wait\"), then release again", st.Phase)
	}
	return c.eng.CheckMoveInFinished(ctx, kind, namespace, name)
}

func confirmError(err error, kind, namespace, name string) error {
	if records.IsNotFound(err) {
		return fmt.Errorf("the new cluster has no %s %q in namespace %q: apply the export there first (\"kubectl catalog apply -f\")", kind, name, namespace)
	}
	return fmt.Errorf("the new cluster's %s %q could not be read: %w", kind, name, err)
}
