package lifecycle

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// Report prints the outcome of a verb: the record with -o, else a sentence saying where
// the instance stands and what to do next. A failure the user must fix is an error.
func Report(streams cmdutil.IOStreams, out *printers.OutputFlags, r engine.Result, name, namespace, verb string, waited bool) error {
	if r.Instance != nil && out != nil && !out.IsTable() {
		if err := out.PrintObject(r.Instance, streams.Out); err != nil {
			return err
		}
	}
	describe := fmt.Sprintf(`"kubectl catalog describe instance %s -n %s"`, name, namespace)
	switch r.State {
	case engine.StateSettled:
		fmt.Fprintf(streams.ErrOut, "Instance %q is ready.\n", name)
		return nil
	case engine.StateDeleted:
		fmt.Fprintf(streams.ErrOut, "Instance %q is deprovisioned.\n", name)
		return nil
	case engine.StateNeedsUser:
		if r.Instance != nil && meta.IsStatusConditionTrue(r.Instance.Status.Conditions, v1alpha1.ConditionUpdateFailed) {
			// The message says the instance still runs as it was and how to go back.
			return fmt.Errorf("instance %q was not updated: %s; see %s", name, r.Message, describe)
		}
		return fmt.Errorf("instance %q failed: %s; see %s", name, r.Message, describe)
	}
	inst := r.Instance
	if r.Refused {
		return fmt.Errorf("instance %q was refused: %s; see %s", name, r.Message, describe)
	}
	if engine.WaitingForReconcile(inst) {
		fmt.Fprintf(streams.ErrOut, "Instance %q is recorded: %s. Follow it with %s.\n", name, iostreams.SafeText(r.Message), describe)
		return nil
	}
	if inst != nil && inst.Status.Retry != nil && (inst.Status.InFlight == nil || !inst.Status.InFlight.Async) {
		return fmt.Errorf("instance %q: %s; it will be retried: follow it with %s, finish it with \"kubectl catalog reconcile\" or \"%s\"", name, iostreams.SafeText(r.Message), describe, waitCommand(r, name, namespace))
	}
	if waited {
		return nil
	}
	fmt.Fprintf(streams.ErrOut, "The broker is working on instance %q (%s). Follow it with %s, or wait for it with \"%s\".\n", name, iostreams.SafeText(r.Message), describe, waitCommand(r, name, namespace))
	return nil
}

// waitCommand is the command that waits for instance name as the verb left it (r): its
// deprovision, or the operation that makes it Ready.
func waitCommand(r engine.Result, name, namespace string) string {
	f := engine.WaitForReady
	if r.Instance != nil && r.Instance.DeletionTimestamp != nil {
		f = engine.WaitForDelete
	}
	return engine.WaitCommand(v1alpha1.KindServiceInstance, namespace, name, f)
}

// NewFollow is how a verb that makes one engine call follows the record it writes, for
// the wait flags w: the operation's notes and progress go to streams' error output, the
// progress timed from the first of them (questions the operation asks before are not
// counted). done ends a live progress line: call it when the operation returns, before
// printing its outcome.
func NewFollow(streams cmdutil.IOStreams, w WaitFlags) (f engine.Follow, done func()) {
	var p *Progress
	started := func() *Progress {
		if p == nil {
			p = NewProgress(streams)
		}
		return p
	}
	f = w.Follow(nil)
	f.Progress = func(r engine.Result) { started().Show(r) }
	f.Note = func(line string) { fmt.Fprintln(started().w, iostreams.SafeText(line)) }
	return f, func() {
		if p != nil {
			p.Done()
		}
	}
}
