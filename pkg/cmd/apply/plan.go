package apply

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/declarative"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// What apply does to an object.
const (
	opCreate    = "created"
	opConfigure = "configured"
	opUnchanged = "unchanged"
)

// action is what apply does to one object, worked out (and checked with the engine's
// own dry run) before anything is written.
type action struct {
	obj *declarative.Object
	op  string
	// changes say what changes, for the user.
	changes []string
	// before is the record as it is (nil for a new one); after is the spec apply asks
	// for, both as the fields apply manages (see view).
	before, after map[string]any

	// provision and update are the requests of a new instance's provision and of an
	// instance's update; bind says that a new binding is bound (bindRequest).
	provision *engine.ProvisionRequest
	update    *engine.InstanceUpdateRequest
	bind      bool
	// moveInstance and moveBinding move in a new instance or binding another cluster's
	// catalog made (moved.go).
	moveInstance *engine.MoveInInstanceRequest
	moveBinding  *engine.MoveInBindingRequest
	// register registers (opCreate) or changes (opConfigure) a broker.
	register *lifecycle.Broker
	// relabel changes the labels and annotations of an existing record to the
	// manifest's; beforeMeta and afterMeta are the labels and annotations that are not
	// the catalog's own, as they are and as the manifest says them.
	relabel               *engine.RelabelRequest
	beforeMeta, afterMeta engine.RecordMetadata
	// rotate rotates a binding whose manifest changes its secret template: the new
	// credentials are rendered with it.
	rotate *engine.RotateRequest
	// share and unshare are the namespaces an instance's grant (spec.sharedWith) gains
	// and loses, changed as "kubectl catalog share" and "unshare" change it.
	share, unshare []string
	// deferred says why a new record is checked by its own engine call only, not by
	// the plan: a new instance's class is of a broker this apply registers (its
	// provision checks it once the broker's catalog is fetched), or a new binding's
	// instance is provisioned by this apply. A dry run cannot check it at all.
	deferred string
}

// planner works out the actions of a set of objects.
type planner struct {
	clients cmdutil.Clients
	wait    lifecycle.WaitFlags
	reader  *records.Reader
	// catalogNS holds the cluster brokers.
	catalogNS string
	// created are the instances this apply creates ("NAMESPACE/NAME"): a binding of one
	// of them is checked once it exists.
	created map[string]bool
	// refused are the new instances the files name whose documents are refused
	// ("NAMESPACE/NAME" to where the document is): a binding of one of them is refused
	// for that, not reported as a binding of an instance that does not exist.
	refused map[string]string
	// newBrokers says that this apply registers brokers: a new instance whose class is
	// not found may be of one of them, and is checked by its provision once their
	// catalogs are fetched.
	newBrokers bool
	// carried are the Secrets' data the manifests carry for bindings moved in.
	carried map[string]map[string][]byte
	// tickets reads the old cluster's move tickets (--moved-from-kubeconfig).
	tickets *ticketReader
}

// plan works out every action, each checked with a client dry run of its engine call;
// the errors name the document. Nothing is written.
func (p *planner) plan(ctx context.Context, objs []*declarative.Object) ([]*action, error) {
	p.created, p.refused = map[string]bool{}, map[string]string{}
	var actions []*action
	var errs []error
	for _, o := range objs {
		a, err := p.planOne(ctx, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.Doc.Where(), err))
			if o.Kind == v1alpha1.KindServiceInstance {
				if _, gerr := p.reader.Instances().Get(ctx, o.Namespace, o.Name); records.IsNotFound(gerr) {
					p.refused[o.Namespace+"/"+o.Name] = o.Doc.Where()
				}
			}
			continue
		}
		if (a.op == opCreate || a.op == opMovedIn) && o.Kind == v1alpha1.KindServiceInstance {
			p.created[o.Namespace+"/"+o.Name] = true
		}
		if a.op == opCreate && o.Kind == v1alpha1.KindBroker {
			p.newBrokers = true
		}
		actions = append(actions, a)
	}
	return actions, errors.Join(errs...)
}

func (p *planner) planOne(ctx context.Context, o *declarative.Object) (*action, error) {
	switch o.Kind {
	case v1alpha1.KindServiceInstance:
		return p.planInstance(ctx, o)
	case v1alpha1.KindServiceBinding:
		return p.planBinding(ctx, o)
	}
	return p.planBroker(ctx, o)
}

// provisionRequest is the request of provisioning the new instance o, as provision
// makes it of its flags (a manifest is complete: nothing is asked), checked with a
// client dry run.
func (p *planner) provisionRequest(o *declarative.Object, params map[string]any) (engine.ProvisionRequest, error) {
	want := o.Inst
	pf := paramFlags(params, want.From)
	in, err := pf.Input(p.clients.Streams.In)
	if err != nil {
		return engine.ProvisionRequest{}, err
	}
	lf := limitFlags(want, nil)
	return engine.ProvisionRequest{
		Namespace: o.Namespace, Name: o.Name, Class: want.ClassRef(), Plan: want.Plan, ExternalID: want.ExternalID,
		Parameters: in, Limits: lf.Limits(), Metadata: o.Metadata, RebindOnUpdate: want.RebindOnUpdate, DryRun: engine.DryRunClient,
	}, nil
}

func (p *planner) planInstance(ctx context.Context, o *declarative.Object) (*action, error) {
	want := o.Inst
	a := &action{obj: o, after: instanceView(want), afterMeta: engine.UserMetadata(o.Metadata.Labels, o.Metadata.Annotations)}
	cur, err := p.reader.Instances().Get(ctx, o.Namespace, o.Name)
	switch {
	case records.IsNotFound(err) && engine.MovedFrom(o.Metadata.Annotations) != "":
		if err := p.planSharing(ctx, a, nil, false); err != nil {
			return nil, err
		}
		return p.planMoveInInstance(ctx, a)
	case records.IsNotFound(err):
		if want.UserProvided {
			return nil, fmt.Errorf("instance %q is user-provided: its credentials are never in a manifest; record it with %s", o.Name, hint.Quoted(o.Namespace, "provision", o.Name, "--user-provided"))
		}
		if err := p.planSharing(ctx, a, nil, false); err != nil {
			return nil, err
		}
		params, err := declarative.ParameterMap(want.Params)
		if err != nil {
			return nil, fmt.Errorf("instance %q: %w", o.Name, err)
		}
		req, err := p.provisionRequest(o, params)
		if err != nil {
			return nil, err
		}
		if _, err := p.clients.Engine.Provision(ctx, req); err != nil {
			if !p.newBrokers || !errors.As(err, new(*marketplace.Error)) {
				return nil, err
			}
			a.deferred = "its class is of a broker this apply registers: it is checked once the broker's catalog is fetched"
		}
		a.op, a.provision = opCreate, &req
		a.changes = []string{"provision"}
		return a, nil
	case err != nil:
		return nil, err
	}
	if fin, ok, err := p.planFinishMoveIn(ctx, a, v1alpha1.KindServiceInstance, cur.Annotations); ok || err != nil {
		return fin, err
	}
	if cur.DeletionTimestamp != nil {
		return nil, fmt.Errorf("instance %q is being deprovisioned: apply it again once it is gone", o.Name)
	}
	if err := declarative.ImmutableInstance(cur, want); err != nil {
		return nil, err
	}
	a.before = instanceView(declarative.RecordInstanceSpec(cur))
	a.after = instanceView(want.Over(cur))
	req := engine.InstanceUpdateRequest{Namespace: o.Namespace, Name: o.Name, DryRun: engine.DryRunClient}
	if want.Plan != "" && want.Plan != cur.Spec.PlanExternalName && want.Plan != cur.Spec.PlanID {
		req.Plan = want.Plan
		a.changes = append(a.changes, "plan "+want.Plan)
	}
	params, err := declarative.ChangedParameters(cur.Spec.Parameters, want.Params)
	if err != nil {
		return nil, fmt.Errorf("instance %q: %w", o.Name, err)
	}
	from, err := declarative.AddedSecrets(cur.Spec.ParametersFrom, want.From)
	if err != nil {
		return nil, fmt.Errorf("instance %q: %w", o.Name, err)
	}
	var pf lifecycle.ParamFlags
	if params != nil || len(from) > 0 {
		pf = paramFlags(params, from)
		a.changes = append(a.changes, "parameters")
	}
	lf := limitFlags(want, cur)
	req.Limits = lf.Limits()
	if lf.Given() {
		a.changes = append(a.changes, "limits")
	}
	if want.RebindOnUpdate != declarative.RebindPolicy(cur.Spec.RebindOnUpdate) {
		policy := cmp.Or(want.RebindOnUpdate, v1alpha1.RebindNever)
		req.RebindOnUpdate = &policy
		a.changes = append(a.changes, "rebindOnUpdate")
	}
	specChanged := len(a.changes) > 0
	if err := p.planSharing(ctx, a, cur.Spec.SharedWith, true); err != nil {
		return nil, err
	}
	p.planRelabel(a, cur.Labels, cur.Annotations)
	if len(a.changes) == 0 {
		a.op = opUnchanged
		return a, nil
	}
	a.op = opConfigure
	if !specChanged {
		return a, nil // the labels only: no update, no broker call
	}
	if req.Parameters, err = pf.Changes(p.clients.Streams.In); err != nil {
		return nil, err
	}
	if _, err := p.clients.Engine.Update(ctx, req); err != nil {
		return nil, err
	}
	a.update = &req
	return a, nil
}

// planSharing adds to a the namespaces the instance's grant gains and loses, each
// checked with a client dry run of share's or unshare's engine call when the instance
// exists (exists), or against the manifest's allowed namespaces when it is new (the
// namespaces are then checked by the share, once the instance is provisioned).
func (p *planner) planSharing(ctx context.Context, a *action, cur []string, exists bool) error {
	o := a.obj
	for _, ns := range o.Inst.SharedWith {
		if !slices.Contains(cur, ns) {
			a.share = append(a.share, ns)
		}
	}
	for _, ns := range cur {
		if !slices.Contains(o.Inst.SharedWith, ns) {
			a.unshare = append(a.unshare, ns)
		}
	}
	if len(a.share)+len(a.unshare) == 0 {
		return nil
	}
	a.changes = append(a.changes, "sharedWith")
	if !exists {
		for _, ns := range a.share {
			if ns == o.Namespace {
				return fmt.Errorf("instance %q: spec.sharedWith names its own namespace %q: bindings of its own namespace need no grant", o.Name, ns)
			}
			if len(o.Inst.Allowed) > 0 && !slices.Contains(o.Inst.Allowed, ns) {
				return fmt.Errorf("instance %q: spec.sharedWith names namespace %q, which spec.allowedNamespaces leaves out: nobody there could bind", o.Name, ns)
			}
		}
		return nil
	}
	return p.share(ctx, a, engine.DryRunClient)
}

// share changes the instance's grant as planSharing planned, through share's and
// unshare's engine calls; a namespace that holds bindings of the instance keeps its grant
// (unshareUnused).
func (p *planner) share(ctx context.Context, a *action, dry engine.DryRun) error {
	o := a.obj
	for _, ns := range a.share {
		res, err := p.clients.Engine.Share(ctx, engine.ShareRequest{Namespace: o.Namespace, Name: o.Name, To: ns, DryRun: dry})
		if err != nil {
			return err
		}
		if res.NamespaceUnchecked && dry != engine.DryRunClient {
			fmt.Fprintf(p.clients.Streams.ErrOut, "Warning: you may not read namespace %q, so whether it exists was not checked.\n", ns)
		}
	}
	for _, ns := range a.unshare {
		confirm := func(u engine.Unsharing) (bool, error) { return unshareUnused(o, ns, u) }
		if _, err := p.clients.Engine.Unshare(ctx, engine.UnshareRequest{Namespace: o.Namespace, Name: o.Name, From: ns, DryRun: dry, Confirm: confirm}); err != nil {
			return err
		}
	}
	return nil
}

// unshareUnused lets apply withdraw a grant only when the namespace holds no binding of
// the instance: removing bindings is for "kubectl catalog unshare", which asks first.
func unshareUnused(o *declarative.Object, ns string, u engine.Unsharing) (bool, error) {
	switch {
	case len(u.Bindings) > 0:
		return false, fmt.Errorf("instance %q: namespace %q, which spec.sharedWith no longer names, holds bindings of it (%s): withdraw the grant with %s, which asks before removing them, or put the namespace back",
			o.Name, ns, strings.Join(u.Bindings, ", "), hint.Quoted(o.Namespace, "unshare", o.Name, "--from-namespace", ns))
	case u.Unseen:
		return false, fmt.Errorf("instance %q: namespace %q, which spec.sharedWith no longer names, may hold bindings of it that you may not list: withdraw the grant with %s, or put the namespace back",
			o.Name, ns, hint.Quoted(o.Namespace, "unshare", o.Name, "--from-namespace", ns))
	}
	return true, nil
}

// planRelabel adds to a the change of the existing record's labels and annotations
// (those that are not the catalog's own) to the manifest's, when they differ.
func (p *planner) planRelabel(a *action, labels, annotations map[string]string) {
	o := a.obj
	a.beforeMeta = engine.UserMetadata(labels, annotations)
	a.afterMeta = engine.UserMetadata(o.Metadata.Labels, o.Metadata.Annotations)
	if a.beforeMeta.Equal(a.afterMeta) {
		return
	}
	a.relabel = &engine.RelabelRequest{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Metadata: a.afterMeta}
	a.changes = append(a.changes, "labels and annotations")
}

func (p *planner) planBinding(ctx context.Context, o *declarative.Object) (*action, error) {
	want := o.Bind
	a := &action{obj: o, after: bindingView(want), afterMeta: engine.UserMetadata(o.Metadata.Labels, o.Metadata.Annotations)}
	cur, err := p.reader.Bindings().Get(ctx, o.Namespace, o.Name)
	switch {
	case records.IsNotFound(err) && engine.MovedFrom(o.Metadata.Annotations) != "":
		return p.planMoveInBinding(ctx, a)
	case records.IsNotFound(err):
		if _, err := declarative.ParameterMap(want.Params); err != nil {
			return nil, fmt.Errorf("binding %q: %w", o.Name, err)
		}
		a.op, a.bind, a.changes = opCreate, true, []string{"bind"}
		instNS := want.InstanceNamespace
		if instNS == "" {
			instNS = o.Namespace
		}
		if p.created[instNS+"/"+want.Instance] {
			a.deferred = "its instance is provisioned by this apply: it is checked when it is bound"
			return a, nil
		}
		if where, ok := p.refused[instNS+"/"+want.Instance]; ok {
			return nil, fmt.Errorf("binding %q: its instance %q is new and refused (%s): fix that document and apply again; the binding is checked once its instance can be provisioned", o.Name, want.Instance, where)
		}
		if _, err := p.bindNow(ctx, o, engine.DryRunClient, engine.Follow{}); err != nil {
			return nil, err
		}
		return a, nil
	case err != nil:
		return nil, err
	}
	if fin, ok, err := p.planFinishMoveIn(ctx, a, v1alpha1.KindServiceBinding, cur.Annotations); ok || err != nil {
		return fin, err
	}
	if cur.DeletionTimestamp != nil {
		return nil, fmt.Errorf("binding %q is being unbound: apply it again once it is gone", o.Name)
	}
	a.before = bindingView(declarative.RecordBindingSpec(cur))
	a.after = bindingView(want.Over(o, cur))
	if diff := changedFields(a.before, a.after); len(diff) == 1 && diff[0] == "spec.secretTemplate" && want.SecretTemplate != nil {
		if err := engine.CheckSecretTemplate(want.SecretTemplate); err != nil {
			return nil, fmt.Errorf("binding %q: %w: fix spec.secretTemplate", o.Name, err)
		}
		a.rotate = &engine.RotateRequest{Namespace: o.Namespace, Name: o.Name, SecretTemplate: want.SecretTemplate}
		a.op, a.changes = opConfigure, []string{"secret template (the credentials are rotated and rendered with it)"}
		p.planRelabel(a, cur.Labels, cur.Annotations)
		return a, nil
	}
	if diff := changedFields(a.before, a.after); len(diff) > 0 {
		return nil, fmt.Errorf("binding %q cannot change (%s): a binding's credentials are made once; unbind it (\"kubectl catalog delete -f\" or %s) and apply again", o.Name, strings.Join(diff, ", "), hint.Quoted(o.Namespace, "unbind", o.Name))
	}
	p.planRelabel(a, cur.Labels, cur.Annotations)
	a.op = opUnchanged
	if a.relabel != nil {
		a.op = opConfigure
	}
	return a, nil
}

// bindNow makes bind's engine call for the new binding o, as bind makes it of its flags
// (a manifest is complete: nothing is asked), with the manifest's transforms and
// projections.
func (p *planner) bindNow(ctx context.Context, o *declarative.Object, dry engine.DryRun, follow engine.Follow) (engine.BindResult, error) {
	want := o.Bind
	params, err := declarative.ParameterMap(want.Params)
	if err != nil {
		return engine.BindResult{}, fmt.Errorf("binding %q: %w", o.Name, err)
	}
	inst, instNS, err := lifecycle.BindInstance(want.Instance, want.InstanceNamespace, false)
	if err != nil {
		return engine.BindResult{}, err
	}
	pf := paramFlags(params, want.From)
	in, err := pf.Input(p.clients.Streams.In)
	if err != nil {
		return engine.BindResult{}, err
	}
	return p.clients.Engine.Bind(ctx, engine.BindRequest{
		Namespace: o.Namespace, Instance: inst, InstanceNamespace: instNS, Name: o.Name, SecretName: want.SecretName, ExternalID: want.ExternalID,
		Parameters: in, Transforms: want.Transforms, Projections: want.Projections, Metadata: o.Metadata,
		DryRun: dry, Follow: follow, SecretTemplate: want.SecretTemplate,
	})
}

func (p *planner) planBroker(ctx context.Context, o *declarative.Object) (*action, error) {
	want := o.Broker
	brokerNS := o.Namespace
	if want.Scope == v1alpha1.ScopeCluster {
		brokerNS = p.catalogNS
	}
	if a := want.Auth; a != nil && a.SecretRef.Namespace != "" && a.SecretRef.Namespace != brokerNS {
		return nil, fmt.Errorf("broker %q: spec.auth.secretRef names namespace %q, but a broker's credentials are read from its own namespace %q only: leave secretRef.namespace out", o.Name, a.SecretRef.Namespace, brokerNS)
	}
	b, err := lifecycle.BrokerForSpec(o.Name, o.Namespace, *want)
	if err != nil {
		return nil, fmt.Errorf("broker %q: %w", o.Name, err)
	}
	a := &action{obj: o, after: brokerView(want), register: &b}
	req := b.Request(engine.DryRunClient, p.clients.Streams.ErrOut)
	req.Note = nil
	cur, err := p.reader.FindBroker(ctx, p.catalogNS, o.Namespace, o.Name, want.Scope)
	switch {
	case brokerNotFound(err):
		if _, err := p.clients.Engine.RegisterBroker(ctx, req); err != nil {
			return nil, err
		}
		a.op = opCreate
		return a, nil
	case err != nil:
		return nil, err
	}
	a.before = brokerView(&cur.Spec)
	res, err := p.clients.Engine.ChangeBroker(ctx, req)
	if err != nil {
		return nil, err
	}
	a.op = opConfigure
	if res.Unchanged {
		a.op = opUnchanged
	}
	return a, nil
}

// brokerNotFound reports whether err is FindBroker's: no broker of that name.
func brokerNotFound(err error) bool {
	return records.IsNotFound(err) || errors.As(err, new(*records.NotFoundError))
}

// paramFlags are the parameter flags that give params and the Secrets of from, as a
// user of provision, update or bind would give them.
func paramFlags(m map[string]any, from []v1alpha1.ParametersFromSource) lifecycle.ParamFlags {
	var f lifecycle.ParamFlags
	if m != nil {
		b, _ := json.Marshal(m)
		f.JSON = string(b)
	}
	for _, s := range from {
		if s.SecretKeyRef == nil {
			continue
		}
		ref := s.SecretKeyRef.Name
		if s.SecretKeyRef.Key != "" {
			ref += "/" + s.SecretKeyRef.Key
		}
		f.FromSecret = append(f.FromSecret, ref)
	}
	return f
}

// limitFlags are the limit flags that give want's limits: all of them for a new
// instance (cur nil), those that differ from cur's otherwise.
func limitFlags(want *declarative.InstanceSpec, cur *v1alpha1.ServiceInstance) lifecycle.LimitFlags {
	var l lifecycle.LimitFlags
	var curMax *int32
	var curAllowed []string
	if cur != nil {
		curMax, curAllowed = cur.Spec.MaxBindings, cur.Spec.AllowedNamespaces
	}
	if !reflect.DeepEqual(curMax, want.MaxBindings) {
		l.MaxBindingsGiven = true
		if want.MaxBindings != nil {
			l.MaxBindings = *want.MaxBindings
		}
	}
	if !declarative.SameStrings(curAllowed, want.Allowed) {
		l.AllowedNamespaces, l.AllowedNamespacesGiven = want.Allowed, true
	}
	return l
}
