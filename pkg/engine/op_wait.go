package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// WaitFor is what "kubectl catalog wait" waits for.
type WaitFor string

// What wait can wait for.
const (
	// WaitForReady: the record's Ready condition is True, its operation finished.
	WaitForReady WaitFor = "condition=Ready"
	// WaitForDelete: the record is gone, its deprovision or unbind finished.
	WaitForDelete WaitFor = "delete"
)

// WaitRequest is what "kubectl catalog wait" is asked for, for one record.
type WaitRequest struct {
	// Kind is v1alpha1.KindServiceInstance or v1alpha1.KindServiceBinding.
	Kind            string
	Namespace, Name string
	For             WaitFor
	// Follow reports the progress; it always waits (Follow.Wait is ignored), for at
	// most Follow.Timeout (0: no limit).
	Follow Follow
}

// WaitCommand is the command that waits for a record of kind (v1alpha1.KindServiceInstance
// or v1alpha1.KindServiceBinding) as for says, with -n namespace: what a hint names when
// an operation is under way.
func WaitCommand(kind, namespace, name string, f WaitFor) string {
	return fmt.Sprintf("kubectl catalog wait %s/%s --for=%s -n %s", waitKind(kind), name, f, namespace)
}

// waitKind is the kind as the wait command's argument names it.
func waitKind(kind string) string {
	if kind == v1alpha1.KindServiceBinding {
		return "binding"
	}
	return "instance"
}

// Wait drives one record until what req.For asks for holds, as a verb's --wait does
// (the claim, the broker's polls, orphan mitigation, reconcile left out while it
// drives), for the operation under way however it was started: a verb without --wait,
// an interrupted one, a record left to reconcile. It starts nothing new: a record that
// is not being deleted is not made to go for WaitForDelete. It returns where the
// record stands, or an error saying why what was waited for does not hold and will not
// without the user (a failed operation, a record gone, a refusal); a timeout is a
// *TimeoutError, an interruption an *InterruptedError.
func (e *Engine) Wait(ctx context.Context, req WaitRequest) (Result, error) {
	kind := waitKind(req.Kind)
	noun, gone := "deprovisioned", "deprovision"
	if kind == "binding" {
		noun, gone = "unbound", "unbind"
	}
	describe := fmt.Sprintf(`"kubectl catalog describe %s %s -n %s"`, kind, req.Name, req.Namespace)
	x, err := e.waitRecord(WithRunnersRights(ctx), kind, req.Namespace, req.Name)
	switch {
	case store.IsNotFound(err) && req.For == WaitForDelete:
		return Result{State: StateDeleted, Message: noun}, nil
	case store.IsNotFound(err):
		return Result{}, fmt.Errorf(`%s %q not found in namespace %q: list them with "kubectl catalog get %ss -n %s"`, kind, req.Name, req.Namespace, kind, req.Namespace)
	case err != nil:
		return Result{}, err
	case req.For == WaitForDelete && x.GetDeletionTimestamp() == nil:
		return Result{}, fmt.Errorf(`%s %q in namespace %q is not being %s, so it will not go: %s it with "kubectl catalog %s %s -n %s"`,
			kind, req.Name, req.Namespace, noun, gone, gone, req.Name, req.Namespace)
	}
	d := instanceFollowed(e, nil)
	if kind == "binding" {
		d = bindingFollowed(e, nil)
	}
	d.again = fmt.Sprintf(`, or wait again with "%s"`, WaitCommand(req.Kind, req.Namespace, req.Name, req.For))
	verb := "be ready"
	if req.For == WaitForDelete {
		verb = "be " + noun
	}
	f := req.Follow
	f.Wait = true
	res, err := e.follow(ctx, d, req.Namespace, req.Name, verb, f)
	if err != nil {
		return res, err
	}
	return res, waitOutcome(kind, req, res, describe)
}

// waitRecord reads the record wait is about.
func (e *Engine) waitRecord(ctx context.Context, kind, namespace, name string) (v1alpha1.Record, error) {
	if kind == "binding" {
		return e.cfg.Store.Bindings().Get(ctx, namespace, name)
	}
	return e.cfg.Store.Instances().Get(ctx, namespace, name)
}

// waitOutcome says why what req waited for does not hold where the drive left the
// record (res), or nil when it does.
func waitOutcome(kind string, req WaitRequest, res Result, describe string) error {
	var x opRecord
	if res.Instance != nil {
		x = res.Instance
	} else if res.Binding != nil {
		x = res.Binding
	}
	switch {
	case req.For == WaitForDelete && res.State == StateDeleted:
		return nil
	case req.For == WaitForDelete:
		return fmt.Errorf("%s %q is not gone: %s; see %s", kind, req.Name, res.Message, describe)
	case res.State == StateDeleted:
		return fmt.Errorf("%s %q is gone: it was deleted while waiting for it to be ready", kind, req.Name)
	case res.State == StateNeedsUser:
		return fmt.Errorf("%s %q failed: %s; see %s", kind, req.Name, res.Message, describe)
	case res.Refused:
		return fmt.Errorf("%s %q was refused: %s; see %s", kind, req.Name, res.Message, describe)
	case WaitingForReconcile(x):
		return fmt.Errorf("%s %q waits for \"kubectl catalog reconcile\": %s; see %s", kind, req.Name, res.Message, describe)
	case res.State != StateSettled || x == nil || !meta.IsStatusConditionTrue(x.OpStatus().Conditions, v1alpha1.ConditionReady):
		return fmt.Errorf("%s %q is not ready: %s; see %s", kind, req.Name, res.Message, describe)
	}
	return nil
}
