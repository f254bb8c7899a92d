package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/secrettemplate"
)

// A binding's secret template (spec.secretTemplate, pkg/secrettemplate) renders Secret
// keys from the broker's credentials, the instance and the binding, after the
// transforms and before the env-shaping rules and the servicebinding.io keys. It is
// checked before any broker call: by bind and by a rotation (against placeholders of
// the keys the binding's Secret has), and by the bind step (parsed, bounded). A template
// that fails on the broker's answer writes no Secret: the one there stays as it was.

// templateError is a failure of a binding's secret template, with the fix.
type templateError struct {
	binding string
	err     error
}

func (e *templateError) Error() string {
	return fmt.Sprintf("%v: fix spec.secretTemplate of binding %q (the Secret is left as it was)", e.err, e.binding)
}

func (e *templateError) Unwrap() error { return e.err }

// isTemplateError reports whether err is a failure of a binding's secret template.
func isTemplateError(err error) bool {
	var te *templateError
	return errors.As(err, &te)
}

// secretTemplateData is what b's template renders from: creds (the broker's
// credentials, nil for placeholders), inst (nil: known only by the binding's spec).
func secretTemplateData(b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance, creds map[string]any) secrettemplate.Data {
	ins, name := b.InstanceRef()
	d := secrettemplate.Data{
		Credentials: creds,
		Instance:    secrettemplate.Instance{Name: name, Namespace: ins},
		Binding:     secrettemplate.Binding{Name: b.Name, Namespace: b.Namespace, SecretName: b.Spec.SecretName, ID: b.CurrentExternalID()},
	}
	if inst != nil {
		d.Instance = secrettemplate.Instance{Name: inst.Name, Namespace: inst.Namespace,
			Class: inst.Spec.ClassExternalName, Plan: inst.Spec.PlanExternalName, ID: inst.CurrentExternalID()}
	}
	return d
}

// renderSecretTemplate is data (the credentials encoded and transformed) with b's
// template applied; data itself when b has none.
func renderSecretTemplate(b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance, creds map[string]any, data map[string][]byte) (map[string][]byte, error) {
	if b.Spec.SecretTemplate == nil {
		return data, nil
	}
	out, err := secrettemplate.Apply(b.Spec.SecretTemplate, data, secretTemplateData(b, inst, creds))
	if err != nil {
		return nil, &templateError{binding: b.Name, err: err}
	}
	return out, nil
}

// checkSecretTemplate checks t, the template b is to render with, before any broker
// call: parsed, bounded, and rendered against placeholders of keys (the keys b's Secret
// has, when it has one) with inst's and b's own values.
func checkSecretTemplate(b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance, t *v1alpha1.SecretTemplate, keys []string) error {
	if t == nil {
		return nil
	}
	return secrettemplate.CheckWith(t, keys, secretTemplateData(b, inst, nil))
}

// refuseBrokenTemplate is the bind step's check of b's template before the broker is
// asked: one that cannot work on any credentials fails the binding for its spec.
func (e bindingSteps) refuseBrokenTemplate(ctx context.Context, b *v1alpha1.ServiceBinding) (Result, bool, error) {
	err := secrettemplate.Check(b.Spec.SecretTemplate)
	if err == nil {
		return Result{}, false, nil
	}
	te := &templateError{binding: b.Name, err: err}
	e.secretTemplateEvent(ctx, b, te)
	r, err := persistTerminal(e.Engine, ctx, b, ReasonSecretTemplateFailed, te.Error())
	return r, true, err
}

// secretTemplateEvent says on b that its template failed: the key and why, never a
// value (pkg/secrettemplate's errors hold none).
func (e *Engine) secretTemplateEvent(ctx context.Context, b *v1alpha1.ServiceBinding, err error) {
	ns, name, ok := eventTarget(b)
	if !ok {
		return
	}
	ev := NewEvent(ns, name, EventWarning, ReasonSecretTemplateFailed, "Bind", err.Error())
	ev.UID = b.GetUID()
	e.event(ctx, ev)
}

// checkBindTemplate is bind's check of req's template, before anything is recorded.
func checkBindTemplate(req BindRequest, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) error {
	if err := checkSecretTemplate(b, inst, req.SecretTemplate, nil); err != nil {
		return &InputError{Err: fmt.Errorf("binding %q not created: %w: fix the template (--secret-template FILE, or spec.secretTemplate in a manifest)", req.Name, err)}
	}
	return nil
}

// checkRotateTemplate is a rotation's check of the template it renders with (req's, or
// the binding's own), before anything is written or sent.
func (e *Engine) checkRotateTemplate(ctx context.Context, b *v1alpha1.ServiceBinding, t *v1alpha1.SecretTemplate) error {
	if t == nil {
		return nil
	}
	ins, name := b.InstanceRef()
	inst, err := e.cfg.Store.Instances().Get(ctx, ins, name)
	if err != nil {
		inst = nil
	}
	var keys []string
	if b.Status.Secret != nil {
		keys = b.Status.Secret.Keys
	}
	if err := checkSecretTemplate(b, inst, t, keys); err != nil {
		return &InputError{Err: fmt.Errorf("binding %q not rotated: %w: fix the template (--secret-template FILE); the Secret is left as it was", b.Name, err)}
	}
	return nil
}

// keepPredecessor ends a rotation whose new credentials the template could not render,
// once the broker confirmed the new binding id unbound: the binding goes back to the id
// it rotated from, whose credentials are still in its Secret, and says why. false (x
// unchanged) when x is not a rotation whose predecessor is still bound.
func keepPredecessor(x *v1alpha1.ServiceBinding, msg string, now time.Time) bool {
	p := x.RotatedFrom()
	if p == nil || x.Status.Bound == nil || x.Status.Bound.BindingID != p.ExternalID {
		return false
	}
	x.Status.ExternalID = p.ExternalID
	x.Status.Predecessor = nil
	x.Status.Retry = nil
	x.Status.Phase = v1alpha1.PhaseReady
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonSecretTemplateFailed,
		fmt.Sprintf("the rotation failed (%s); its new binding id was unbound, and Secret %q keeps the credentials of binding id %s", msg, x.Spec.SecretName, p.ExternalID), now)
	return true
}

// templateRotationError is the error of a rotation that went back to the credentials
// it had because the template failed on the new ones; nil for any other result.
func templateRotationError(res RotateResult) error {
	b := res.Binding
	if b == nil {
		return nil
	}
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Reason != ReasonSecretTemplateFailed || b.CurrentExternalID() != res.OldID {
		return nil
	}
	return fmt.Errorf("binding %q not rotated: %s; fix the template and rotate again (%s)", res.Name, c.Message,
		hint.Quoted(res.Namespace, "bind", "--rotate", res.Name, "--secret-template", "FILE"))
}

// CheckSecretTemplate checks t without data (parsed, bounded), as the bind step does.
func CheckSecretTemplate(t *v1alpha1.SecretTemplate) error { return secrettemplate.Check(t) }
