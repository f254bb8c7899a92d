package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/jsonschema"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The Prepare functions turn what a user asked a verb for into the record to write:
// they resolve names, read the plan's schema, type and merge the parameters, read those
// of Secrets and check everything against the schema, so that bad input is refused
// before anything is recorded. They write nothing and call no broker.

// InputError is a mistake in what the user gave (parameters that are not a JSON
// object, a -p without "=", parameters for an instance that takes none): the command
// was used wrongly, and nothing was written.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// UsageMistake marks the error as a mistake in how the command was invoked.
func (e *InputError) UsageMistake() bool { return true }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// ParametersInput are the parameters as a command was given them: the content of
// --params-json or --params-file, the -p key=value pairs (typed by the plan's schema
// once it is known) and the Secrets of --params-from-secret.
type ParametersInput struct {
	// Object is a JSON object of parameters; empty for none.
	Object []byte
	// Pairs are key=value pairs; they override Object's keys. A key given several
	// times becomes an array.
	Pairs []string
	// FromSecret are read for every broker call, never copied into the record.
	FromSecret []v1alpha1.ParametersFromSource
}

// given reports whether any parameter was given.
func (p ParametersInput) given() bool {
	return len(p.Object) > 0 || len(p.Pairs) > 0 || len(p.FromSecret) > 0
}

// decodeParametersObject decodes a JSON object of parameters, keeping numbers as
// written. Anything but one JSON object is an error.
func decodeParametersObject(raw []byte) (map[string]any, error) {
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&out); err != nil || out == nil {
		return nil, fmt.Errorf("parameters must be a JSON object: %v", err)
	}
	// Anything after the object would be dropped silently: refuse it.
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("parameters must be a single JSON object: there is more after it")
	}
	return out, nil
}

// inline builds the inline parameters: Object with Pairs on top, typed by schema.
func (p ParametersInput) inline(schema json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	if len(p.Object) > 0 {
		obj, err := decodeParametersObject(p.Object)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		out = obj
	}
	pairs, err := ParseParamFlags(p.Pairs, schema)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	for k, v := range pairs {
		out[k] = v
	}
	return out, nil
}

// resolved reads the Secrets of from with the user's rights and merges their
// parameters with inline, the JSON object of the record.
func (e *Engine) resolved(ctx context.Context, namespace string, inline []byte, from []v1alpha1.ParametersFromSource) (Parameters, error) {
	var ext *runtime.RawExtension
	if len(inline) > 0 {
		ext = &runtime.RawExtension{Raw: inline}
	}
	return ResolveParameters(ctx, namespace, ext, from, func(ctx context.Context, ns, name string) (map[string][]byte, error) {
		s, err := e.cfg.Store.GetSecret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	})
}

// Asker asks the user for what a request leaves out; prompt.Prompter is one.
type Asker interface {
	Select(message string, options []string, def string) (string, error)
	Input(message, help, def string) (string, error)
}

// InstanceRequest is what provision is asked for.
type InstanceRequest struct {
	Namespace, Name string
	// Class and Plan are names as the user gave them (see marketplace.Resolve); an
	// empty Plan is fine when the class has one plan.
	Class, Plan string
	// ExternalID is the OSB instance id; a fresh one when empty.
	ExternalID string
	Parameters ParametersInput
	// Ask asks for a missing class, plan or required parameter; nil when no one can
	// be asked, and then a missing class or plan is a usage mistake.
	Ask Asker
}

// PrepareInstance resolves the class and plan of req, builds its parameters and checks
// them, with those of Secrets, against the plan's create schema. It returns the record
// to create.
func (e *Engine) PrepareInstance(ctx context.Context, req InstanceRequest) (*v1alpha1.ServiceInstance, error) {
	res, err := instanceVerbs{e}.resolvePlan(ctx, &req)
	if err != nil {
		return nil, err
	}
	e.prepared.keep(res.Class, e.cfg.CatalogNamespace, res.Rules)
	// The broker's credentials Secret goes out with the schemas' read, ahead of the
	// provision's call (brokerSecretAhead).
	e.brokerSecretAhead(ctx, res.Class.Namespace, res.Class.Spec.BrokerName)
	var schema json.RawMessage
	if s, err := res.Schemas(ctx); err != nil {
		return nil, err
	} else if s != nil && s.InstanceCreate != nil {
		schema = s.InstanceCreate.Raw
	}
	inline, err := req.Parameters.inline(schema)
	if err != nil {
		return nil, err
	}
	if err := askRequired(req.Ask, schema, inline); err != nil {
		return nil, err
	}
	var raw []byte
	if len(inline) > 0 {
		raw, _ = json.Marshal(inline)
	}
	all, err := e.resolved(ctx, req.Namespace, raw, req.Parameters.FromSecret)
	if err != nil {
		return nil, err
	}
	if err := ValidateParameters(schema, all.JSON()); err != nil {
		return nil, fmt.Errorf("instance %q not provisioned: %w (see the plan's schema with \"kubectl catalog describe plan %s/%s --show-schemas\")", req.Name, err, res.Class.Spec.ExternalName, res.Plan.ExternalName)
	}
	id := req.ExternalID
	if id == "" {
		id = e.namespaceBoundID(ctx, req.Namespace)
	}
	inst := NewInstance(req.Namespace, req.Name, res.Class, res.Plan, raw, req.Parameters.FromSecret, id)
	if req.ExternalID == "" {
		e.prepared.generated(inst.Spec.ExternalID)
	}
	return inst, nil
}

// resolvePlan finds the class and plan, asking for what is missing when it can.
func (e instanceVerbs) resolvePlan(ctx context.Context, req *InstanceRequest) (*marketplace.Resolution, error) {
	opt := marketplace.InCatalogNamespace(e.cfg.CatalogNamespace)
	if req.Class == "" {
		if req.Ask == nil {
			return nil, inputErrorf(`--class is required: list the classes with "kubectl catalog marketplace"`)
		}
		classes, err := marketplace.ListClasses(ctx, e.cfg.Store, req.Namespace, store.Filter{}, opt)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, c := range classes {
			if !c.Status.RemovedFromBroker {
				names = append(names, c.Spec.ExternalName)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf(`no class can be provisioned in namespace %q: register a broker with "kubectl catalog register"`, req.Namespace)
		}
		sort.Strings(names)
		if req.Class, err = req.Ask.Select("Class:", names, ""); err != nil {
			return nil, err
		}
	}
	res, err := marketplace.Resolve(ctx, e.cfg.Store, req.Namespace, req.Class, req.Plan, opt)
	if err != nil {
		return nil, err
	}
	if res.Plan != nil {
		return res, nil
	}
	var plans []string
	for _, p := range res.Class.Spec.Plans {
		if !res.Class.PlanRemoved(p.ID) {
			plans = append(plans, p.ExternalName)
		}
	}
	switch {
	case len(plans) == 1:
		req.Plan = plans[0]
	case req.Ask != nil:
		if req.Plan, err = req.Ask.Select("Plan:", plans, ""); err != nil {
			return nil, err
		}
	default:
		return nil, inputErrorf("--plan is required: class %q has plans %s", res.Class.Spec.ExternalName, strings.Join(plans, ", "))
	}
	return marketplace.Resolve(ctx, e.cfg.Store, req.Namespace, req.Class, req.Plan, opt)
}

// askRequired asks for the schema's required parameters that are missing, when it
// can; otherwise the schema validation names them.
func askRequired(ask Asker, schema json.RawMessage, params map[string]any) error {
	if ask == nil || len(schema) == 0 {
		return nil
	}
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	for _, k := range s.Required {
		if _, ok := params[k]; ok {
			continue
		}
		v, err := ask.Input(fmt.Sprintf("Parameter %s:", k), s.Properties[k].Description, "")
		if err != nil {
			return err
		}
		typed, err := ParseParamFlags([]string{k + "=" + v}, schema)
		if err != nil {
			return err
		}
		params[k] = typed[k]
	}
	return nil
}

// UpdateRequest is what update is asked to change in a brokered instance.
type UpdateRequest struct {
	// Plan is the plan to move to, by name or OSB id; empty keeps the plan.
	Plan string
	// Upgrade moves to the plan's newest maintenance version.
	Upgrade bool
	// Parameters are merged into the instance's; nil when none were given.
	Parameters *ParametersInput
}

// PreparedUpdate is the instance record an update writes, and what changes.
type PreparedUpdate struct {
	// Instance is a copy of the instance with the spec changed.
	Instance *v1alpha1.ServiceInstance
	// Changes say what changes, for the user ("plan standard", "parameters"); none
	// when there is nothing to update.
	Changes []string
	// Notes say what was asked for and needs no change.
	Notes []string
	// Class is the instance's class record as read.
	Class *v1alpha1.ServiceClass
}

// PrepareUpdate applies req to a copy of inst: the plan, if the current plan may
// change (plan_updateable); the maintenance version; the parameters, merged into the
// instance's. The parameters the update will send are checked against the target plan's
// update schema, exactly those (see planUpdateParameters); on a plan change, the values
// of every parameter that stands after it too (see checkStandingParameters).
func (e *Engine) PrepareUpdate(ctx context.Context, inst *v1alpha1.ServiceInstance, req UpdateRequest) (*PreparedUpdate, error) {
	inst = inst.DeepCopy()
	out := &PreparedUpdate{Instance: inst}
	// The schemas are kept under the class record's name: they are read with the class.
	bns, name := e.brokerNamespace(inst), v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID)
	var schemas *ahead.Read[*v1alpha1.ServicePlanSchemas]
	if req.Parameters != nil || req.Plan != "" {
		schemas = ahead.Start(ctx, func() (*v1alpha1.ServicePlanSchemas, error) { return e.cfg.Store.PlanSchemas().Get(ctx, bns, name) })
	}
	// The broker's credentials Secret goes out with the class's read, ahead of the
	// update's call (brokerSecretAhead).
	e.brokerSecretAhead(ctx, bns, inst.Spec.BrokerName)
	class, err := e.cfg.Store.Classes().Get(ctx, bns, name)
	if err != nil {
		return nil, fmt.Errorf("cannot read the class of instance %q: %w", inst.Name, err)
	}
	out.Class = class
	target, planChanged, err := updatePlan(inst, class, req.Plan)
	if err != nil {
		return nil, err
	}
	if planChanged {
		inst.Spec.PlanID, inst.Spec.PlanExternalName = target.ID, target.ExternalName
		out.Changes = append(out.Changes, "plan "+target.ExternalName)
	}
	if req.Upgrade {
		switch {
		case target == nil || target.MaintenanceInfo == nil:
			out.Notes = append(out.Notes, fmt.Sprintf("Plan %q has no maintenance version; nothing to upgrade.", inst.Spec.PlanExternalName))
		case inst.Status.Provisioned != nil && inst.Status.Provisioned.MaintenanceInfoVersion == target.MaintenanceInfo.Version:
			out.Notes = append(out.Notes, fmt.Sprintf("Instance %q already has maintenance version %s.", inst.Name, target.MaintenanceInfo.Version))
		default:
			inst.Spec.MaintenanceInfoVersion = target.MaintenanceInfo.Version
			out.Changes = append(out.Changes, "maintenance version "+target.MaintenanceInfo.Version)
		}
	}
	if req.Parameters != nil {
		if err := prepareUpdateParameters(e, ctx, out, schemas, target, *req.Parameters); err != nil {
			return nil, err
		}
	}
	if planChanged {
		if err := (instanceVerbs{e}).checkStandingParameters(ctx, inst, schemas, target); err != nil {
			return nil, fmt.Errorf("instance %q not updated: %w (see the plan's schemas with \"kubectl catalog describe plan %s/%s --show-schemas\")",
				inst.Name, err, class.Spec.ExternalName, target.ExternalName)
		}
	}
	return out, nil
}

// updatePlan is the plan an update moves inst to: plan, named by name or id, when it is
// not inst's plan already (changed), else inst's own plan. A plan the class does not
// offer, or a change from a plan that may not change, is refused.
func updatePlan(inst *v1alpha1.ServiceInstance, class *v1alpha1.ServiceClass, plan string) (target *v1alpha1.ServicePlan, planChanged bool, err error) {
	cur := class.PlanByID(inst.Spec.PlanID)
	target = cur
	if plan != "" && (cur == nil || (plan != cur.ExternalName && plan != cur.ID)) {
		target = class.PlanByName(plan)
		if target == nil {
			target = class.PlanByID(plan)
		}
		if target == nil {
			var names []string
			for _, p := range class.Spec.Plans {
				if !class.PlanRemoved(p.ID) {
					names = append(names, p.ExternalName)
				}
			}
			return nil, false, fmt.Errorf("class %q has no plan %q: choose one of %s", class.Spec.ExternalName, plan, strings.Join(names, ", "))
		}
		if class.PlanRemoved(target.ID) {
			return nil, false, fmt.Errorf("plan %q of class %q is no longer offered by the broker: choose another plan", target.ExternalName, class.Spec.ExternalName)
		}
		if cur != nil && !class.EffectivePlanUpdateable(cur) {
			return nil, false, fmt.Errorf("instance %q cannot change plan: plan %q of class %q is not updateable (plan_updateable: false); deprovision it and provision a new instance instead",
				inst.Name, cur.ExternalName, class.Spec.ExternalName)
		}
		planChanged = true
	}
	return target, planChanged, nil
}

// prepareUpdateParameters merges params into the spec of out.Instance, typed by the
// schema of the call that sends them, and notes the parameters the update sends with
// them (see planUpdateParameters).
func prepareUpdateParameters(e *Engine, ctx context.Context, out *PreparedUpdate, schemas *ahead.Read[*v1alpha1.ServicePlanSchemas], target *v1alpha1.ServicePlan, params ParametersInput) error {
	inst, class := out.Instance, out.Class
	var update, create json.RawMessage
	if s, err := schemas.Wait(); err == nil && target != nil {
		if ps := s.ForPlan(target.ID); ps != nil {
			if ps.InstanceUpdate != nil {
				update = ps.InstanceUpdate.Raw
			}
			if ps.InstanceCreate != nil {
				create = ps.InstanceCreate.Raw
			}
		}
	}
	// -p values are typed by the schema of the call that sends them: the provision's
	// for an instance the broker does not hold yet.
	typing := update
	if inst.Status.Provisioned == nil {
		typing = create
	}
	given, err := params.inline(typing)
	if err != nil {
		return err
	}
	merged := map[string]json.RawMessage{}
	if inst.Spec.Parameters != nil && len(inst.Spec.Parameters.Raw) > 0 {
		_ = json.Unmarshal(inst.Spec.Parameters.Raw, &merged)
	}
	for k, v := range given {
		b, _ := json.Marshal(v)
		merged[k] = b
	}
	if len(merged) > 0 {
		b, _ := json.Marshal(merged)
		inst.Spec.Parameters = &runtime.RawExtension{Raw: b}
	}
	inst.Spec.ParametersFrom = append(inst.Spec.ParametersFrom, params.FromSecret...)
	added, err := instanceVerbs{e}.planUpdateParameters(ctx, inst, sortedKeys(given), update, create)
	if err != nil {
		return fmt.Errorf("instance %q not updated: %w (see the plan's schemas with \"kubectl catalog describe plan %s/%s --show-schemas\")",
			inst.Name, err, class.Spec.ExternalName, inst.Spec.PlanExternalName)
	}
	if len(added) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("The update also sends %s, unchanged: the plan's update schema asks for %s with the parameters that change.",
			strings.Join(added, ", "), map[bool]string{true: "it", false: "them"}[len(added) == 1]))
	}
	out.Changes = append(out.Changes, "parameters")
	return nil
}

// checkStandingParameters checks, when an update moves inst (the record as the update
// writes it) to plan target, the parameters that stand after it: every parameter the
// instance keeps (the held ones merged with those given, its Secrets' included) against
// the values the new plan's schema accepts, its update schema's or else its create
// schema's. An OSB broker keeps what an update does not send, so a value the old plan
// allowed and the new one does not (storage_gb 8 from hobby, where standard wants at
// least 20) would otherwise stay, unchecked by anyone. Only the values are judged: which
// keys an update sends is planUpdateBody's, and the body it checks is unchanged by this
// one, which sends nothing. For an instance the broker does not hold yet, the provision
// that follows sends every parameter: all are checked against the new plan's create
// schema, as that provision's are.
func (e instanceVerbs) checkStandingParameters(ctx context.Context, inst *v1alpha1.ServiceInstance, schemas *ahead.Read[*v1alpha1.ServicePlanSchemas], target *v1alpha1.ServicePlan) error {
	if inst.Spec.Parameters == nil && len(inst.Spec.ParametersFrom) == 0 {
		return nil
	}
	s, err := schemas.Wait()
	if err != nil {
		return nil // no schemas recorded: the plan asks for nothing the engine can check
	}
	ps := s.ForPlan(target.ID)
	if ps == nil {
		return nil
	}
	var schema json.RawMessage
	switch {
	case inst.Status.Provisioned == nil:
		// The provision that follows sends every parameter, all checked.
		if ps.InstanceCreate == nil {
			return nil
		}
		params, err := e.resolved(ctx, inst.Namespace, rawOf(inst.Spec.Parameters), inst.Spec.ParametersFrom)
		if err != nil {
			return err
		}
		return ValidateParameters(ps.InstanceCreate.Raw, params.JSON())
	case ps.InstanceUpdate != nil:
		schema = ps.InstanceUpdate.Raw
	case ps.InstanceCreate != nil:
		schema = ps.InstanceCreate.Raw
	}
	sch, err := compileSchema(schema)
	if sch == nil || err != nil {
		return err
	}
	params, err := e.resolved(ctx, inst.Namespace, rawOf(inst.Spec.Parameters), inst.Spec.ParametersFrom)
	if err != nil {
		return err
	}
	if len(params.All) == 0 {
		return nil
	}
	v, err := decodeJSON(params.body())
	if err != nil {
		return err
	}
	problems, err := sch.ValidateValue(v)
	if err != nil {
		return err
	}
	problems = slices.DeleteFunc(problems, func(pr jsonschema.Problem) bool { return len(pr.Path) == 0 })
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("plan %q does not accept a value the instance keeps: %w", target.ExternalName,
		invalidParameters(problems, func(pr jsonschema.Problem) string { return standingFix(pr, params) }))
}

// planBound is a problem with a number's bound: "minimum: got 8, want 20".
var planBound = regexp.MustCompile(`^(?:minimum|maximum): got \S+, want (\S+)$`)

// standingFix says how to give a parameter the instance keeps a value the new plan
// accepts: in the same update, with -p, the bound itself when the value is beyond one.
func standingFix(pr jsonschema.Problem, p Parameters) string {
	key := pr.Path[0]
	value := "VALUE"
	if m := planBound.FindStringSubmatch(pr.Message); m != nil && len(pr.Path) == 1 {
		value = m[1]
	}
	how := "-p " + key + "=" + value
	if p.FromSecret[key] {
		how = "a value in the parameters Secret, or " + how
	}
	return "the instance keeps it from its current plan, and an update does not change what it does not send: give it a value the plan accepts in the same update, " + how
}

// planUpdateParameters checks the parameters the next call for inst, the record as the
// update writes it, sends: for a provisioned instance the update's body (see
// planUpdateBody: the parameters that change, the keys named, and the unchanged ones
// the update schema asks for), checked against the update schema, and the record's held
// hashes changed so that the engine sends that body; for one not provisioned yet, the
// provision's, every parameter, checked against the create schema. Parameters that
// all have the values the broker holds send nothing and are not checked. It returns the
// keys the update sends again because the schema asks for them.
func (e instanceVerbs) planUpdateParameters(ctx context.Context, inst *v1alpha1.ServiceInstance, named []string, update, create json.RawMessage) ([]string, error) {
	// The Secrets are read with the user's rights: it is the user who asks.
	params, err := e.resolved(ctx, inst.Namespace, rawOf(inst.Spec.Parameters), inst.Spec.ParametersFrom)
	if err != nil {
		return nil, err
	}
	prov := inst.Status.Provisioned
	if prov == nil {
		return nil, ValidateParameters(create, params.JSON())
	}
	params = params.salted(&inst.Status.OperationStatus)
	if params.SameChecksum(prov.ParametersChecksum) {
		return nil, nil
	}
	held, added, err := planUpdateBody(update, params, prov.ParameterHashes, named)
	if err != nil {
		return nil, err
	}
	prov.ParameterHashes = held
	return added, nil
}

// BindingRequest is what bind is asked for, once the instance is known to be bindable.
type BindingRequest struct {
	// BindingIntent names the binding, its Secret, transforms and projections; its
	// parameters come from Parameters.
	BindingIntent
	Parameters ParametersInput
}

// PrepareBinding builds the binding of inst that req asks for, its parameters checked,
// with those of Secrets, against the binding schema of the plan the broker holds. class
// is inst's class record, nil when it is gone. A user-provided instance takes no
// parameters: its bindings get a copy of its credentials.
func (e *Engine) PrepareBinding(ctx context.Context, inst *v1alpha1.ServiceInstance, class *v1alpha1.ServiceClass, req BindingRequest) (*v1alpha1.ServiceBinding, error) {
	return bindingVerbs{e}.prepareBinding(ctx, inst, class, nil, req)
}

// prepareBinding is PrepareBinding with the class's plan schemas being read already
// (schemas; nil: read them here).
func (e bindingVerbs) prepareBinding(ctx context.Context, inst *v1alpha1.ServiceInstance, class *v1alpha1.ServiceClass, schemas *ahead.Read[*v1alpha1.ServicePlanSchemas], req BindingRequest) (*v1alpha1.ServiceBinding, error) {
	in := req.BindingIntent
	if in.ExternalID == "" {
		in.ExternalID = e.namespaceBoundID(ctx, in.Namespace)
	}
	if inst.IsUserProvided() {
		if req.Parameters.given() {
			return nil, inputErrorf("instance %q is user-provided: its bindings get a copy of its credentials and take no parameters; binding %q not created", inst.Name, in.Name)
		}
		return NewBinding(in), nil
	}
	var schema json.RawMessage
	if class != nil && inst.Status.Provisioned != nil {
		if schemas == nil {
			schemas = ahead.Done(e.cfg.Store.PlanSchemas().Get(ctx, class.Namespace, class.Name))
		}
		s, err := schemas.Wait()
		if err != nil && !store.IsNotFound(err) {
			return nil, fmt.Errorf("cannot read the binding schema of instance %q's plan: %w", inst.Name, err)
		}
		if err == nil {
			if ps := s.ForPlan(inst.Status.Provisioned.PlanID); ps != nil && ps.BindingCreate != nil {
				schema = ps.BindingCreate.Raw
			}
		}
	}
	inline, err := req.Parameters.inline(schema)
	if err != nil {
		return nil, err
	}
	var raw []byte
	if len(inline) > 0 {
		raw, _ = json.Marshal(inline)
	}
	all, err := e.resolved(ctx, in.Namespace, raw, req.Parameters.FromSecret)
	if err != nil {
		return nil, err
	}
	if err := ValidateParameters(schema, all.JSON()); err != nil {
		return nil, fmt.Errorf("binding %q not created: %w (see the plan's binding schema with \"kubectl catalog describe plan %s/%s --show-schemas\")",
			in.Name, err, inst.Spec.ClassExternalName, inst.Spec.PlanExternalName)
	}
	in.Parameters, in.ParametersFrom = raw, req.Parameters.FromSecret
	return NewBinding(in), nil
}
