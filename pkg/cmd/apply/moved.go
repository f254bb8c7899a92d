package apply

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/declarative"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
)

// The manifests "kubectl catalog export" prints on another cluster carry the annotation
// engine.AnnotationMovedFrom: a new instance or binding of such a manifest is moved in
// as it is (engine.MoveInInstance, MoveInBinding), never provisioned or bound. A v1
// Secret carrying the annotation ("export --show-secrets") is not applied as an object:
// its data goes into the binding of its name that is moved in.

// opMovedIn is what apply does to an instance or binding moved in from another cluster.
const opMovedIn = "moved in"

// carriedSecret keeps the data of a v1 Secret document carrying engine.AnnotationMovedFrom
// for the binding moved in with it; it reports whether d was one.
func (o *Options) carriedSecret(d declarative.Document) (bool, error) {
	u := d.Obj
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Secret" || engine.MovedFrom(u.GetAnnotations()) == "" {
		return false, nil
	}
	ns := u.GetNamespace()
	if ns == "" {
		ns = o.Namespace
	}
	raw, _ := u.Object["data"].(map[string]any)
	data := map[string][]byte{}
	for k, v := range raw {
		s, _ := v.(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return true, fmt.Errorf("%s: Secret %q: data key %q is not base64: export it again", d.Where(), u.GetName(), k)
		}
		data[k] = b
	}
	if o.carried == nil {
		o.carried = map[string]map[string][]byte{}
	}
	o.carried[ns+"/"+u.GetName()] = data
	return true, nil
}

// planMoveInInstance plans the move of the new instance o, checked by a client dry run
// of its engine call (the class, plan and parameters, the id free here, GET instance
// where the broker serves it).
func (p *planner) planMoveInInstance(ctx context.Context, a *action) (*action, error) {
	o := a.obj
	req, err := p.moveInInstanceRequest(o)
	if err != nil {
		return nil, err
	}
	if req.Ticket, err = p.ticketFor(ctx, o.Namespace, req.ExternalID); err != nil {
		return nil, err
	}
	if _, err := p.clients.Engine.MoveInInstance(ctx, req); err != nil {
		if !p.newBrokers || !errors.As(err, new(*marketplace.Error)) {
			return nil, err
		}
		a.deferred = "its class is of a broker this apply registers: it is checked once the broker's catalog is fetched"
	}
	a.op, a.moveInstance = opMovedIn, &req
	a.changes = []string{"move in"}
	return a, nil
}

func (p *planner) moveInInstanceRequest(o *declarative.Object) (engine.MoveInInstanceRequest, error) {
	want := o.Inst
	if want.UserProvided {
		return engine.MoveInInstanceRequest{}, fmt.Errorf("instance %q is user-provided: no broker holds it, so there is nothing to move in; record it here with %s", o.Name, hint.Quoted(o.Namespace, "provision", o.Name, "--user-provided"))
	}
	params, err := declarative.ParameterMap(want.Params)
	if err != nil {
		return engine.MoveInInstanceRequest{}, fmt.Errorf("instance %q: %w", o.Name, err)
	}
	pf := paramFlags(params, want.From)
	in, err := pf.Input(p.clients.Streams.In)
	if err != nil {
		return engine.MoveInInstanceRequest{}, err
	}
	lf := limitFlags(want, nil)
	return engine.MoveInInstanceRequest{
		Namespace: o.Namespace, Name: o.Name, Class: want.ClassRef(), Plan: want.Plan, ExternalID: want.ExternalID,
		Parameters: in, Limits: lf.Limits(), Metadata: o.Metadata, RebindOnUpdate: want.RebindOnUpdate,
		From: engine.MovedFrom(o.Metadata.Annotations), DryRun: engine.DryRunClient,
	}, nil
}

// planMoveInBinding plans the move of the new binding o: checked now by a client dry run
// when its instance exists, else when it is moved in.
func (p *planner) planMoveInBinding(ctx context.Context, a *action) (*action, error) {
	o := a.obj
	want := o.Bind
	if want.InstanceNamespace != "" && want.InstanceNamespace != o.Namespace {
		return nil, fmt.Errorf("binding %q is of instance %q of namespace %q: a binding of another namespace's instance is not moved in; bind it again here once that instance is moved", o.Name, want.Instance, want.InstanceNamespace)
	}
	req := p.moveInBindingRequest(o)
	var err error
	if req.Ticket, err = p.ticketFor(ctx, o.Namespace, req.ExternalID); err != nil {
		return nil, err
	}
	a.op, a.moveBinding, a.changes = opMovedIn, &req, []string{"move in"}
	if p.created[o.Namespace+"/"+want.Instance] {
		a.deferred = "its instance is moved in by this apply: it is checked when it is moved in"
		return a, nil
	}
	if where, ok := p.refused[o.Namespace+"/"+want.Instance]; ok {
		return nil, fmt.Errorf("binding %q: its instance %q is new and refused (%s): fix that document and apply again", o.Name, want.Instance, where)
	}
	if _, err := p.clients.Engine.MoveInBinding(ctx, req); err != nil {
		return nil, err
	}
	return a, nil
}

func (p *planner) moveInBindingRequest(o *declarative.Object) engine.MoveInBindingRequest {
	want := o.Bind
	req := engine.MoveInBindingRequest{
		Namespace: o.Namespace, Name: o.Name, Instance: want.Instance, SecretName: want.SecretName, ExternalID: want.ExternalID,
		Parameters: want.Params, ParametersFrom: want.From, Transforms: want.Transforms, SecretTemplate: want.SecretTemplate,
		Metadata: o.Metadata, From: engine.MovedFrom(o.Metadata.Annotations), DryRun: engine.DryRunClient,
	}
	secretName := req.SecretName
	if secretName == "" {
		secretName = o.Name
	}
	req.Credentials = p.carried[o.Namespace+"/"+secretName]
	return req
}

// planFinishMoveIn plans, for a manifest of a move whose record exists here, moved in
// from the same cluster by an earlier apply that was interrupted (engine.UnfinishedMoveIn
// says what it left undone), the engine call that finishes it; ok is false where there is
// nothing to finish, and the record is planned as any other.
func (p *planner) planFinishMoveIn(ctx context.Context, a *action, kind string, recorded map[string]string) (_ *action, ok bool, _ error) {
	o := a.obj
	from := engine.MovedFrom(o.Metadata.Annotations)
	if from == "" || engine.MovedFrom(recorded) != from {
		return nil, false, nil
	}
	missing, err := p.clients.Engine.UnfinishedMoveIn(ctx, kind, o.Namespace, o.Name)
	if err != nil || len(missing) == 0 {
		return nil, false, err
	}
	a.op, a.changes = opMovedIn, []string{"finish the interrupted move in (" + strings.Join(missing, ", ") + ")"}
	if kind == v1alpha1.KindServiceInstance {
		req, err := p.moveInInstanceRequest(o)
		if err != nil {
			return nil, true, err
		}
		if _, err := p.clients.Engine.MoveInInstance(ctx, req); err != nil {
			return nil, true, err
		}
		a.moveInstance = &req
		return a, true, nil
	}
	req := p.moveInBindingRequest(o)
	if _, err := p.clients.Engine.MoveInBinding(ctx, req); err != nil {
		return nil, true, err
	}
	a.moveBinding = &req
	return a, true, nil
}

// moveIn makes the engine call of a moved-in instance or binding.
func (o *Options) moveIn(ctx context.Context, a *action, follow engine.Follow) error {
	if a.moveInstance != nil {
		req := *a.moveInstance
		req.DryRun, req.Follow = o.DryRun.Engine(), follow
		res, err := o.Engine.MoveInInstance(ctx, req)
		o.moveNotes(a, res)
		return err
	}
	req := *a.moveBinding
	req.DryRun = o.DryRun.Engine()
	res, err := o.Engine.MoveInBinding(ctx, req)
	o.moveNotes(a, res)
	return err
}

// moveNotes says on standard error what a move checked and what the broker keeps.
func (o *Options) moveNotes(a *action, res engine.MoveInResult) {
	for _, n := range res.Notes {
		fmt.Fprintf(o.Streams.ErrOut, "%s %q: %s\n", a.obj.Kind, a.obj.Name, n)
	}
}
