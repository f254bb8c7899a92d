package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/declarative"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

var applyLong = cmdutil.LongDesc(`
	Make the catalog's records what manifests say: register the brokers,
	provision the instances and bind the bindings they name that do not exist,
	change the brokers and update the instances whose spec changed, share and
	unshare instances as their spec.sharedWith says (as "kubectl catalog share"
	and "unshare"; a namespace still holding bindings keeps its grant), and
	leave alone what is unchanged (no broker call, no write).

	The manifests are the catalog's own kinds (catalog.kubectl-catalog.io/v1alpha1
	ServiceInstance, ServiceBinding and Broker, exactly as "kubectl catalog get
	NAME -o yaml" prints them; server metadata and status are ignored) and those
	of the retired Service Catalog (servicecatalog.k8s.io/v1beta1 ServiceInstance,
	ServiceBinding, ServiceBroker, ClusterServiceBroker). Other kinds are skipped
	with a note, so the whole output of "helm template" or "kustomize build" can
	be piped in with -f -.

	Every document is checked first, with the same checks as provision, update
	and bind (the class and plan exist, the parameters match the plan's schema,
	what cannot change has not): an error names the file and the document, and
	nothing is changed. Then apply acts in order (brokers, instances, bindings)
	through the same engine calls as those commands. Secret parameters are only
	ever references (parametersFrom), read on every broker call.

	A new broker is registered as "kubectl catalog register" does (its
	credentials only ever a Secret reference), and a changed one (URL, Secret,
	CA, relist interval, restrictions) is changed with the same checks; both
	fetch its catalog.

	The labels and annotations of a manifest go onto the records it creates,
	for selectors (get -l) and --prune, and replace those of an existing record
	that differ (one write, no broker call; the catalog's own keys are kept as
	they are). With --prune -l SELECTOR, the records of the applied namespaces
	with those labels that the manifests no longer name are unbound and
	deprovisioned, after a confirmation (--yes outside a terminal).`)

var applyExample = cmdutil.Examples(`
	# Apply every manifest of a directory
	kubectl catalog apply -f services/

	# Apply the catalog's objects of a chart's output, skipping the other kinds
	helm template my-app ./chart | kubectl catalog apply -f -

	# Apply manifests written for the retired Service Catalog, and wait until done
	kubectl catalog apply -f svcat-manifests/ -R --wait

	# See what would be done, checked by the API server, without doing it
	kubectl catalog apply -f services/ --dry-run=server

	# Also deprovision the instances labelled app=shop that the files no longer name
	kubectl catalog apply -f services/ --prune -l app=shop --yes

	# Move in an export whose ids kubectl catalog generated on the old cluster, checked
	# against the move ticket there (the namespace annotated as continuing the old one)
	kubectl catalog apply -f shop.yaml --moved-from-kubeconfig ~/.kube/config --moved-from-context old`)

// Options are the options of apply.
type Options struct {
	Files FileFlags
	Prune PruneFlags
	lifecycle.VerbOptions

	// CatalogNamespace holds the cluster brokers.
	CatalogNamespace string
	// explicitNamespace says that -n was given: a manifest of another namespace is an
	// error.
	explicitNamespace bool
	reader            *records.Reader
	// carried are the data of the Secrets the manifests carry for bindings moved in
	// ("NAMESPACE/NAME"; moved.go).
	carried map[string]map[string][]byte
	// MovedFrom names the cluster the manifests were exported from (ticket.go).
	MovedFrom MovedFromFlags
	tickets   *ticketReader
}

// NewCmdApply returns the apply command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdApply(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	o.Output = printers.NewFormatOutputFlags([]string{"name"}, "", `Output format: "name" prints only the name of each object.`, func(format string) error {
		return cmdutil.UsageErrorf("-o %q: apply prints one line an object; -o name prints only the names", format)
	})
	cmd := &cobra.Command{
		Use:     "apply -f FILENAME [-R]",
		Short:   "Provision, update and bind what manifests name",
		Long:    applyLong,
		Example: applyExample,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(f, o, runF),
	}
	o.Files.AddFlags(cmd, "to apply")
	o.Prune.AddFlags(cmd)
	o.AddFlags(cmd, "work of every record", "the records")
	o.MovedFrom.AddFlags(cmd)
	return cmd
}

// AddFlags adds -f and -R.
func (f *FileFlags) AddFlags(cmd *cobra.Command, what string) {
	cmd.Flags().StringArrayVarP(&f.Filenames, "filename", "f", nil, `Files or directories of manifests `+what+` ("-" for standard input). Repeatable.`)
	cmd.Flags().BoolVarP(&f.Recursive, "recursive", "R", false, "Read the directories of -f and their subdirectories.")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if err := o.Files.Validate(); err != nil {
		return err
	}
	if err := o.Prune.validate(); err != nil {
		return err
	}
	return o.ValidateFlags("changes nothing")
}

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	if err := o.VerbOptions.Complete(f); err != nil {
		return err
	}
	_, explicit, err := f.Namespace()
	if err != nil {
		return err
	}
	o.explicitNamespace, o.CatalogNamespace = explicit, f.CatalogNamespace
	o.tickets = newTicketReader(o.MovedFrom, f, o.Streams)
	o.reader, err = f.Reader()
	return err
}

// load reads the manifests and decodes the catalog's objects, in the order apply acts
// on them; the skipped kinds are noted on standard error.
func (o *Options) load() ([]*declarative.Object, error) {
	docs, err := o.Files.read(o.Streams.In)
	if err != nil {
		return nil, err
	}
	var objs []*declarative.Object
	var errs []error
	for _, d := range docs {
		obj, skip, err := declarative.Decode(d)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", d.Where(), err))
			continue
		case obj == nil:
			if carried, err := o.carriedSecret(d); carried {
				if err != nil {
					errs = append(errs, err)
				}
				continue
			}
			fmt.Fprintf(o.Streams.ErrOut, "%s: %s\n", d.Where(), iostreams.SafeText(fmt.Sprint(skip)))
			continue
		}
		if err := o.placeIn(obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.Where(), err))
			continue
		}
		if obj.SvcatBroker != nil {
			if err := declarative.BrokerFromSvcat(obj, o.CatalogNamespace); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", d.Where(), err))
				continue
			}
		}
		for _, n := range obj.Notes {
			fmt.Fprintf(o.Streams.ErrOut, "%s: %s %q: %s\n", d.Where(), d.Obj.GetKind(), obj.Name, iostreams.SafeText(fmt.Sprint(n)))
		}
		objs = append(objs, obj)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, obj := range objs {
		key := obj.Kind + "/" + obj.Namespace + "/" + obj.Name
		if first, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("%s: %s %q in namespace %q is named again (first in %s)", obj.Doc.Where(), obj.Kind, obj.Name, obj.Namespace, first))
		}
		seen[key] = obj.Doc.Where()
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].Order() < objs[j].Order() })
	return objs, errors.Join(errs...)
}

// placeIn sets the namespace of obj: the manifest's, else the command's; a manifest of
// another namespace than an explicit -n is an error, as with kubectl.
func (o *Options) placeIn(obj *declarative.Object) error {
	if obj.Kind == v1alpha1.KindBroker && obj.Broker.Scope != v1alpha1.ScopeNamespace {
		obj.Namespace = o.Namespace
		return nil
	}
	switch {
	case obj.Namespace == "":
		obj.Namespace = o.Namespace
	case o.explicitNamespace && obj.Namespace != o.Namespace:
		return fmt.Errorf("the namespace of %s %q (%s) does not match the namespace of the command (%s): drop -n or the manifest's metadata.namespace", obj.Kind, obj.Name, obj.Namespace, o.Namespace)
	}
	return nil
}

// planner is the planner of these options.
func (o *Options) planner() *planner {
	return &planner{clients: o.Clients, wait: o.Wait, reader: o.reader, catalogNS: o.CatalogNamespace, carried: o.carried, tickets: o.tickets}
}

// Run checks every manifest, then acts.
func (o *Options) Run(ctx context.Context) error {
	objs, err := o.load()
	if err != nil {
		return fmt.Errorf("nothing was applied:\n%w", err)
	}
	p := o.planner()
	actions, err := p.plan(ctx, objs)
	if err != nil {
		return fmt.Errorf("nothing was applied:\n%w", err)
	}
	if o.Prune.Prune && !o.Prune.Yes && !o.DryRun.Enabled() && !o.Streams.CanPrompt() {
		return usageErrorf("--prune unbinds and deprovisions at the broker what the manifests no longer name: confirm with --yes (there is no terminal to ask in)")
	}
	if err := o.act(ctx, p, actions); err != nil {
		return err
	}
	if o.Prune.Prune {
		return o.prune(ctx, objs)
	}
	return nil
}

// act carries the actions out in order (brokers, instances, bindings); with --wait it
// waits for the instances before the bindings, and for the bindings at the end, in one
// progress view. An error of one action does not stop the others.
func (o *Options) act(ctx context.Context, p *planner, actions []*action) error {
	fol := lifecycle.NewFollowing(o.Streams)
	defer fol.Done()
	var errs []error
	for _, kind := range []string{v1alpha1.KindBroker, v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
		var acted []*action
		for _, a := range actions {
			if a.obj.Kind != kind {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if a.op != opUnchanged {
				if err := o.actOne(ctx, p, a, fol.Follow(lifecycle.WaitFlags{Interval: o.Wait.Interval})); err != nil {
					errs = append(errs, fmt.Errorf("%s %q: %w", a.obj.Kind, a.obj.Name, err))
					continue
				}
				acted = append(acted, a)
			}
			fol.Done()
			o.printResult(a)
		}
		if o.Wait.Wait && kind != v1alpha1.KindBroker {
			// A broker's catalog is fetched by the registration itself.
			errs = append(errs, o.waitAll(ctx, acted, fol)...)
		}
	}
	return errors.Join(errs...)
}

// actOne makes the engine call of a, as its verb does, then changes the record's labels
// and annotations when the manifest's differ.
func (o *Options) actOne(ctx context.Context, p *planner, a *action, follow engine.Follow) error {
	if err := o.call(ctx, p, a, follow); err != nil {
		return err
	}
	if a.op != opCreate && a.op != opMovedIn || !o.DryRun.Enabled() {
		// A new instance's grant is checked by the plan: a dry run has no record to share.
		if err := p.share(ctx, a, o.DryRun.Engine()); err != nil {
			return err
		}
	}
	if a.relabel == nil {
		return nil
	}
	a.relabel.DryRun = o.DryRun.Engine()
	_, err := o.Engine.Relabel(ctx, *a.relabel)
	return err
}

// call makes the engine call of a's verb.
func (o *Options) call(ctx context.Context, p *planner, a *action, follow engine.Follow) error {
	switch {
	case a.deferred != "" && o.DryRun.Enabled():
		fmt.Fprintf(o.Streams.ErrOut, "%s: %s %q not checked by the dry run: %s\n", a.obj.Doc.Where(), a.obj.Kind, a.obj.Name, iostreams.SafeText(fmt.Sprint(a.deferred)))
		return nil
	case a.moveInstance != nil || a.moveBinding != nil:
		return o.moveIn(ctx, a, follow)
	case a.provision != nil:
		req := *a.provision
		req.DryRun, req.Follow = o.DryRun.Engine(), follow
		_, err := o.Engine.Provision(ctx, req)
		return err
	case a.update != nil:
		req := *a.update
		req.DryRun, req.Follow = o.DryRun.Engine(), follow
		req.Vouch = cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Prune.Yes, "apply")
		_, err := o.Engine.Update(ctx, req)
		return err
	case a.bind:
		_, err := p.bindNow(ctx, a.obj, o.DryRun.Engine(), follow)
		return err
	case a.register != nil:
		return o.register(ctx, a, o.DryRun.Engine())
	case a.rotate != nil && o.DryRun.Enabled():
		fmt.Fprintf(o.Streams.ErrOut, "%s: binding %q would be rotated, its new credentials rendered with the manifest's secret template\n", a.obj.Doc.Where(), a.obj.Name)
		return nil
	case a.rotate != nil:
		req := *a.rotate
		req.Follow = follow
		req.Vouch = cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Prune.Yes, "apply")
		_, err := o.Engine.Rotate(ctx, req)
		return err
	}
	return nil
}

// register registers (opCreate) or changes the broker of a, as register does, printing
// its catalog's warnings.
func (o *Options) register(ctx context.Context, a *action, dry engine.DryRun) error {
	req := a.register.Request(dry, o.Streams.ErrOut)
	if a.op == opCreate {
		res, err := o.Engine.RegisterBroker(ctx, req)
		if err != nil {
			return err
		}
		lifecycle.WarnCatalog(o.Streams.ErrOut, res.Catalog)
		return nil
	}
	res, err := o.Engine.ChangeBroker(ctx, req)
	if err != nil {
		return err
	}
	lifecycle.WarnCatalog(o.Streams.ErrOut, res.Catalog)
	return nil
}

// waitAll waits until each of the records is settled, one after the other in one
// progress view.
func (o *Options) waitAll(ctx context.Context, actions []*action, fol *lifecycle.Following) []error {
	if o.DryRun.Enabled() {
		return nil
	}
	var errs []error
	for _, a := range actions {
		follow := fol.Follow(o.Wait)
		var r engine.Result
		var err error
		if a.obj.Kind == v1alpha1.KindServiceInstance {
			r, err = o.Engine.FollowInstance(ctx, a.obj.Namespace, a.obj.Name, "apply", nil, follow)
		} else {
			r, err = o.Engine.FollowBinding(ctx, a.obj.Namespace, a.obj.Name, "apply", nil, follow)
		}
		if err == nil && r.State != engine.StateSettled {
			err = fmt.Errorf("%s", r.Message)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", a.obj.Kind, a.obj.Name, err))
		}
	}
	return errs
}

// printResult prints what apply did to an object, as kubectl apply does.
func (o *Options) printResult(a *action) {
	op := a.op + dryRunSuffix(o.DryRun)
	printName(o.Streams.Out, a.obj, op, o.Output.Format() == "name")
}

// dryRunSuffix is what a line of a dry run ends with.
func dryRunSuffix(d cmdutil.DryRunStrategy) string {
	switch d {
	case cmdutil.DryRunClient:
		return " (dry run)"
	case cmdutil.DryRunServer:
		return " (server dry run)"
	}
	return ""
}

// usageErrorf is cmdutil.UsageErrorf.
var usageErrorf = cmdutil.UsageErrorf

// printName prints "kind.group/name op", or the name alone (-o name).
func printName(w io.Writer, obj *declarative.Object, op string, short bool) {
	p := printers.NamePrinterFor(op)
	if short {
		p = printers.NamePrinterFor("")
	}
	_ = p.PrintObj(nameOnly(obj), w)
}

// nameOnly is a record of obj's kind and name, for the name printer.
func nameOnly(obj *declarative.Object) runtime.Object {
	u := &metav1.PartialObjectMetadata{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: v1alpha1.GroupName, Version: v1alpha1.Version, Kind: obj.Kind})
	u.SetName(obj.Name)
	u.SetNamespace(obj.Namespace)
	return u
}
