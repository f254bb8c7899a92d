package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
)

// MovedFromFlags name the cluster the manifests were exported from, whose move tickets
// (engine.MoveTicket) give the ids kubectl catalog generated there to a namespace here.
type MovedFromFlags struct {
	Kubeconfig, Context string
}

// AddFlags adds --moved-from-kubeconfig and --moved-from-context.
func (m *MovedFromFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&m.Kubeconfig, "moved-from-kubeconfig", "", `The kubeconfig of the cluster the manifests were exported from, to read its move tickets ("export --to-cluster-id --to-namespace"): needed to move in ids kubectl catalog generated there.`)
	cmd.Flags().StringVar(&m.Context, "moved-from-context", "", "The context of --moved-from-kubeconfig to use (default: its current context).")
	_ = cmd.MarkFlagFilename("moved-from-kubeconfig")
}

// ticketReader reads, with the user's rights on the old cluster, the move tickets its
// namespaces hold for this cluster, once a namespace.
type ticketReader struct {
	f  *cmdutil.Factory
	mu sync.Mutex
	// read are the tickets read, by namespace.
	read map[string]*engine.MoveTicket
}

func newTicketReader(m MovedFromFlags, f *cmdutil.Factory, streams cmdutil.IOStreams) *ticketReader {
	if m.Kubeconfig == "" {
		return nil
	}
	other := cmdutil.NewFactory(streams)
	other.ConfigFlags.KubeConfig = &m.Kubeconfig
	if m.Context != "" {
		other.ConfigFlags.Context = &m.Context
	}
	other.CatalogNamespace = f.CatalogNamespace
	return &ticketReader{f: other, read: map[string]*engine.MoveTicket{}}
}

// ticket is the move ticket namespace namespace of the old cluster holds for namespace
// namespace of the cluster here; nil, and no error, when r is nil (no
// --moved-from-kubeconfig) or when it holds none. The old cluster's id and the
// namespace's uid are read from the old cluster, not taken from the ticket.
func (r *ticketReader) ticket(ctx context.Context, here, namespace string) (*engine.MoveTicket, error) {
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.read[namespace]; ok {
		return t, nil
	}
	core, err := r.f.KubernetesClient()
	if err != nil {
		return nil, fmt.Errorf("the cluster moved from (--moved-from-kubeconfig): %w", err)
	}
	idCM, err := core.CoreV1().ConfigMaps(r.f.CatalogNamespace).Get(ctx, kube.ClusterIDConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the cluster moved from (--moved-from-kubeconfig): its cluster id (ConfigMap %s/%s): %w", r.f.CatalogNamespace, kube.ClusterIDConfigMap, err)
	}
	from := idCM.Data[kube.ClusterIDKey]
	if from == here {
		return nil, fmt.Errorf("--moved-from-kubeconfig names this cluster (id %s): give the kubeconfig of the cluster the manifests were exported from; nothing was applied", here)
	}
	nsObj, err := core.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.read[namespace] = nil // no namespace there, no ticket
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster moved from (--moved-from-kubeconfig): namespace %q: %w", namespace, err)
	}
	cm, err := core.CoreV1().ConfigMaps(namespace).Get(ctx, engine.MoveTicketName(here, namespace), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.read[namespace] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster moved from (--moved-from-kubeconfig): the move ticket of namespace %q: %w", namespace, err)
	}
	t := engine.MoveTicketFrom(cm, types.UID(nsObj.UID))
	t.FromClusterID = from
	r.read[namespace] = t
	return t, nil
}

// ticketFor is the ticket a record of namespace moved in under id needs: none for an id
// kubectl catalog did not generate.
func (p *planner) ticketFor(ctx context.Context, namespace, id string) (*engine.MoveTicket, error) {
	if !v1alpha1.IsBoundID(id) || p.tickets == nil {
		return nil, nil
	}
	here, err := p.clients.Engine.ClusterID(ctx)
	if err != nil {
		return nil, err
	}
	return p.tickets.ticket(ctx, here, namespace)
}
