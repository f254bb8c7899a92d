// Package export implements "kubectl catalog export": a namespace's brokers, instances
// and bindings as the manifests "kubectl catalog apply -f" on another cluster moves in as
// they are, under their OSB ids, with no provision and no bind (docs/moving.md).
package export

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

var exportLong = cmdutil.LongDesc(`
	Print a namespace's instances (all, or those named), their bindings and
	the brokers they use as the manifests "kubectl catalog apply -f" takes,
	to move them to another cluster that shares the brokers. Each keeps its
	OSB id (spec.externalID) and carries the annotation
	catalog.kubectl-catalog.io/moved-from with this cluster's id: apply on
	the other cluster moves them in as they are, provisioning and binding
	nothing. The broker is asked only what it serves there: GET instance and
	GET binding where the service is retrievable, to check the ids; where the
	service allows context updates, one update carrying only the new
	context is sent.

	Brokers are exported with their Secret references, never their
	credentials: create the Secrets on the other cluster first. Binding
	credentials are not exported: the other cluster fetches them with GET
	binding where the service serves it; for the others, --show-secrets adds
	the bindings' Secrets to the output (handle it as the Secrets it holds),
	or copy the Secrets over yourself.

	Only settled records are exported: an instance or binding with work under
	way is refused, naming it. Once the other cluster holds them, forget them
	here without a broker call with "kubectl catalog release".`)

var exportExample = cmdutil.Examples(`
	# Export namespace shop's services, and move them in on the new cluster
	kubectl catalog export -n shop > shop.yaml
	kubectl --context new catalog apply -f shop.yaml --wait

	# Export one instance and its bindings, with the bindings' credentials
	kubectl catalog export db -n shop --show-secrets > db.yaml

	# Move ids kubectl catalog generated too: a move ticket for namespace shop of the
	# cluster whose id is NEW-ID, read there by "apply --moved-from-kubeconfig"
	kubectl catalog export -n shop --to-cluster-id NEW-ID --to-namespace shop > shop.yaml

	# Then forget them here, once the new cluster confirms it holds them
	kubectl catalog release -n shop --confirm-with-kubeconfig ~/.kube/config --confirm-context new`)

// Options are the options of export.
type Options struct {
	AllNamespaces bool
	ShowSecrets   bool
	// ToClusterID and ToNamespace, when given, write a move ticket (engine.MoveTicket)
	// giving the exported ids kubectl catalog generated here to that namespace of that
	// cluster.
	ToClusterID, ToNamespace string
	// Output is -o: yaml (the default) or json.
	Output *printers.OutputFlags
	// Names are the instances to export; none: all of the namespace.
	Names []string

	Namespace        string
	CatalogNamespace string
	Reader           *records.Reader
	Engine           *engine.Engine
	// Core writes the move ticket.
	Core    kubernetes.Interface
	Streams cmdutil.IOStreams
}

// NewCmdExport returns the export command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdExport(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams}
	o.Output = printers.NewFormatOutputFlags([]string{"yaml", "json"}, "yaml", "Output format. One of: (yaml, json).", func(format string) error {
		return cmdutil.UsageErrorf("--output must be yaml or json, not %q", format)
	})
	cmd := &cobra.Command{
		Use:               "export [INSTANCE...] [-n NAMESPACE | -A] [-o yaml|json] [--show-secrets]",
		Short:             "Print instances, bindings and brokers to move them to another cluster",
		Long:              exportLong,
		Example:           exportExample,
		ValidArgsFunction: complete.Instances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Names = args
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Export the instances of every namespace.")
	fs.BoolVar(&o.ShowSecrets, "show-secrets", false, "Add the bindings' credentials Secrets to the output, for bindings whose broker does not serve GET binding.")
	fs.StringVar(&o.ToClusterID, "to-cluster-id", "", `The id of the cluster the services move to (its ConfigMap catalog-cluster-id): writes a move ticket here that lets that cluster move in the ids kubectl catalog generated (with --to-namespace; "apply --moved-from-kubeconfig" there reads it).`)
	fs.StringVar(&o.ToNamespace, "to-namespace", "", "The namespace of --to-cluster-id the services move to.")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the flags without I/O; it changes nothing.
func (o *Options) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if o.AllNamespaces && len(o.Names) > 0 {
		return cmdutil.UsageErrorf("instance names are of one namespace: give -n NAMESPACE, not -A")
	}
	if (o.ToClusterID == "") != (o.ToNamespace == "") {
		return cmdutil.UsageErrorf("a move ticket names a cluster and a namespace: give both --to-cluster-id and --to-namespace, or neither; nothing was exported")
	}
	if o.ToClusterID != "" && o.AllNamespaces {
		return cmdutil.UsageErrorf("a move ticket is of one namespace: give -n NAMESPACE with --to-cluster-id, not -A; nothing was exported")
	}
	return nil
}

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	e, ns, err := f.EngineIn(cmdutil.EngineOptions{})
	if err != nil {
		return err
	}
	o.Engine, o.Namespace, o.CatalogNamespace = e, ns, f.CatalogNamespace
	if o.AllNamespaces {
		o.Namespace = ""
	}
	if o.Core, err = f.KubernetesClient(); err != nil {
		return err
	}
	o.Reader, err = f.Reader()
	return err
}

// Run reads the records and prints them as one List.
func (o *Options) Run(ctx context.Context) error {
	from, err := o.Engine.ClusterID(ctx)
	if err != nil {
		return err
	}
	insts, err := o.instances(ctx)
	if err != nil {
		return err
	}
	var items []any
	var bindings []any
	var secrets []any
	brokers := map[string]*v1alpha1.Broker{}
	var problems []string
	var ids []string
	for _, inst := range insts {
		if why := unsettled("instance", inst, inst.Status.Provisioned == nil); why != "" {
			problems = append(problems, why)
			continue
		}
		if inst.IsUserProvided() {
			fmt.Fprintf(o.Streams.ErrOut, "instance %q of namespace %q is user-provided and is not exported: no broker holds it; record it on the other cluster with %s\n", inst.Name, inst.Namespace, hint.Quoted(inst.Namespace, "provision", inst.Name, "--user-provided"))
			continue
		}
		key := inst.Namespace + "/" + inst.Spec.BrokerName
		brokerNS := inst.Namespace
		if inst.Spec.Scope == v1alpha1.ScopeCluster {
			key, brokerNS = "/"+inst.Spec.BrokerName, o.CatalogNamespace
		}
		if _, ok := brokers[key]; !ok {
			b, err := o.Reader.Brokers().Get(ctx, brokerNS, inst.Spec.BrokerName)
			if err != nil {
				return fmt.Errorf("broker %q of instance %q: %w", inst.Spec.BrokerName, inst.Name, err)
			}
			brokers[key] = b
		}
		items = append(items, instanceManifest(inst, from))
		ids = append(ids, inst.Spec.ExternalID)
		bs, err := o.Reader.Bindings().List(ctx, inst.Namespace, records.Filter{Instance: inst.Name})
		if err != nil {
			return err
		}
		for _, b := range bs {
			if b.Spec.InstanceNamespace != "" && b.Spec.InstanceNamespace != inst.Namespace {
				continue
			}
			if why := unsettled("binding", b, b.Status.Bound == nil); why != "" {
				problems = append(problems, why)
				continue
			}
			bindings = append(bindings, bindingManifest(b, from))
			ids = append(ids, b.Spec.ExternalID)
			if o.ShowSecrets {
				s, err := o.Reader.Secret(ctx, b.Namespace, secretName(b))
				if err != nil {
					return fmt.Errorf("binding %q: its Secret %q: %w", b.Name, secretName(b), err)
				}
				secrets = append(secrets, secretManifest(s, from))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("nothing was exported: only settled records can be moved:\n  %s", joinLines(problems))
	}
	if o.ToClusterID != "" {
		if err := o.writeTicket(ctx, from, ids); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(brokers))
	for k := range brokers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []any
	for _, k := range keys {
		out = append(out, brokerManifest(brokers[k]))
	}
	out = append(out, secrets...)
	out = append(out, items...)
	out = append(out, bindings...)
	return o.print(map[string]any{"apiVersion": "v1", "kind": "List", "items": out})
}

// instances reads the instances to export: those named, or every one of the namespace.
func (o *Options) instances(ctx context.Context) ([]*v1alpha1.ServiceInstance, error) {
	if len(o.Names) == 0 {
		all, err := o.Reader.Instances().List(ctx, o.Namespace, records.Filter{})
		if err != nil {
			return nil, err
		}
		if len(all) == 0 {
			where := fmt.Sprintf("namespace %q", o.Namespace)
			if o.Namespace == "" {
				where = "any namespace"
			}
			return nil, fmt.Errorf("%s has no instances: nothing was exported; check the namespace (-n) with \"kubectl catalog get instances -A\"", where)
		}
		return all, nil
	}
	var out []*v1alpha1.ServiceInstance
	for _, name := range o.Names {
		inst, err := o.Reader.Instances().Get(ctx, o.Namespace, name)
		if records.IsNotFound(err) {
			return nil, fmt.Errorf("instance %q does not exist in namespace %q: nothing was exported; see the instances with %s", name, o.Namespace, hint.Quoted(o.Namespace, "get", "instances"))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	return out, nil
}

// unsettled says why a record with work under way cannot be exported ("" when settled).
func unsettled[T interface {
	v1alpha1.Record
	OpStatus() *v1alpha1.OperationStatus
}](kind string, x T, unmade bool) string {
	st := x.OpStatus()
	if x.GetDeletionTimestamp() == nil && !unmade && st.InFlight == nil && st.Retry == nil && st.OrphanMitigation == nil {
		return ""
	}
	return fmt.Sprintf("%s %q of namespace %q has work under way (%s): wait for it (\"kubectl catalog wait %s/%s -n %s\") and export again", kind, x.GetName(), x.GetNamespace(), st.Phase, kind, x.GetName(), x.GetNamespace())
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

// meta is the metadata of an exported manifest: the name, the namespace, the labels and
// annotations the user gave (not the catalog's own) and the moved-from mark.
func meta(m metav1.ObjectMeta, from string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}
	user := engine.UserMetadata(m.Labels, m.Annotations)
	out.Labels = user.Labels
	out.Annotations = map[string]string{}
	for k, v := range user.Annotations {
		out.Annotations[k] = v
	}
	if from != "" {
		out.Annotations[engine.AnnotationMovedFrom] = from
	}
	return out
}

func instanceManifest(inst *v1alpha1.ServiceInstance, from string) *v1alpha1.ServiceInstance {
	spec := *inst.Spec.DeepCopy()
	// The id the broker holds it under now (a record provisioned under a generated id
	// names none in its spec).
	spec.ExternalID = inst.CurrentExternalID()
	return &v1alpha1.ServiceInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindServiceInstance},
		ObjectMeta: meta(inst.ObjectMeta, from),
		Spec:       spec,
	}
}

func bindingManifest(b *v1alpha1.ServiceBinding, from string) *v1alpha1.ServiceBinding {
	spec := *b.Spec.DeepCopy()
	spec.ExternalID = b.CurrentExternalID()
	spec.SecretName = secretName(b)
	// Workloads are the other cluster's to project into: "bind --to" there.
	spec.Projections = nil
	return &v1alpha1.ServiceBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindServiceBinding},
		ObjectMeta: meta(b.ObjectMeta, from),
		Spec:       spec,
	}
}

func brokerManifest(b *v1alpha1.Broker) *v1alpha1.Broker {
	spec := *b.Spec.DeepCopy()
	spec.RelistRequests = 0
	m := metav1.ObjectMeta{Name: b.Name}
	if spec.Scope == v1alpha1.ScopeNamespace {
		m.Namespace = b.Namespace
	}
	return &v1alpha1.Broker{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindBroker},
		ObjectMeta: m,
		Spec:       spec,
	}
}

// secretManifest is a binding's Secret as apply on the other cluster takes it: its data
// only, with no owner (this cluster's records are not there) and the moved-from mark.
func secretManifest(s *corev1.Secret, from string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Annotations: map[string]string{engine.AnnotationMovedFrom: from}},
		Type:       s.Type,
		Data:       s.Data,
	}
}

func secretName(b *v1alpha1.ServiceBinding) string {
	if b.Spec.SecretName != "" {
		return b.Spec.SecretName
	}
	return b.Name
}

func (o *Options) print(list map[string]any) error {
	var data []byte
	var err error
	if o.Output.Format() == "json" {
		data, err = json.MarshalIndent(list, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(list)
	}
	if err != nil {
		return err
	}
	_, err = o.Streams.Out.Write(data)
	return err
}

// writeTicket writes, in the exported namespace, the move ticket giving the ids
// kubectl catalog generated among ids to namespace ToNamespace of cluster ToClusterID,
// with the user's rights here; the ids of an earlier ticket to the same place are kept.
func (o *Options) writeTicket(ctx context.Context, from string, ids []string) error {
	if o.ToClusterID == from {
		return fmt.Errorf("--to-cluster-id %s is this cluster's id: give the id of the cluster the services move to (its ConfigMap catalog-cluster-id in the catalog namespace); nothing was exported", from)
	}
	var generated []string
	for _, id := range ids {
		if v1alpha1.IsBoundID(id) {
			generated = append(generated, id)
		}
	}
	if len(generated) == 0 {
		return nil
	}
	cms := o.Core.CoreV1()
	t := engine.MoveTicket{FromClusterID: from, FromNamespace: o.Namespace, ToClusterID: o.ToClusterID, ToNamespace: o.ToNamespace, IDs: generated}
	want := t.ConfigMap()
	cur, err := cms.ConfigMaps(o.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.ConfigMaps(o.Namespace).Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		if old := engine.MoveTicketFrom(cur, ""); old != nil {
			t.IDs = append(t.IDs, old.IDs...)
		}
		cur.Data = t.ConfigMap().Data
		cur.Labels = want.Labels
		_, err = cms.ConfigMaps(o.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("the move ticket to cluster %s, namespace %q (ConfigMap %s in namespace %q): %w; nothing was exported", o.ToClusterID, o.ToNamespace, want.Name, o.Namespace, err)
	}
	fmt.Fprintf(o.Streams.ErrOut, "move ticket %s: %d id(s) of namespace %q may move to namespace %q of cluster %s\n", want.Name, len(generated), o.Namespace, o.ToNamespace, o.ToClusterID)
	return nil
}
