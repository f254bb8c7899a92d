package lifecycle

import (
	"context"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// Deprovisioning deprovisions an instance as "kubectl catalog deprovision" does, for
// the command and for "delete -f": it says what goes and confirms (Yes: without asking),
// follows the instance's bindings and then the instance, and says where it stands.
// Abandon drops the records without calling the broker.
type Deprovisioning struct {
	Name    string
	Yes     bool
	Abandon bool

	VerbOptions
}

// Run deprovisions the instance (engine.Engine.Deprovision) and prints the outcome.
func (o *Deprovisioning) Run(ctx context.Context) error {
	p := newDeprovisionProgress(o.Streams)
	follow := o.Wait.Follow(nil)
	follow.Progress, follow.Note = p.show, p.note
	res, err := o.Engine.Deprovision(ctx, engine.DeprovisionRequest{
		Namespace: o.Namespace, Name: o.Name, Abandon: o.Abandon, DryRun: o.DryRun.Engine(), Follow: o.AnnounceReconcile(follow), Confirm: o.confirm,
	})
	p.done()
	if err != nil || res.Declined {
		return err
	}
	switch {
	case o.DryRun.Enabled():
		verb := "deprovisioned at the broker"
		if o.Abandon {
			verb = "abandoned (the broker not told)"
		}
		return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, res.Instance, "deleted", fmt.Sprintf("%s in namespace %q would be %s", res.What, o.Namespace, verb))
	case res.Abandoned:
		fmt.Fprintf(o.Streams.ErrOut, "Instance %q abandoned: its records are gone; the broker was not told.\n", o.Name)
		return nil
	}
	if err := Report(o.Streams, o.Output, res.Result, o.Name, o.Namespace, "deprovision", o.Wait.Wait); err != nil {
		return err
	}
	if engine.WaitingForReconcile(res.Instance) {
		o.SayWhenReconcileRuns()
	}
	return nil
}

// confirm says what is about to be deleted and asks whether to go on. A dry run, which
// deletes nothing, asks nothing.
func (o *Deprovisioning) confirm(d engine.Deprovisioning) (bool, error) {
	if o.DryRun.Enabled() {
		return true, nil
	}
	if o.Abandon {
		fmt.Fprintf(o.Streams.ErrOut, "WARNING: abandoning %s in namespace %q.\nWARNING: the broker is NOT called: whatever it holds for this instance stays there (and may still be billed).\n", d.What, o.Namespace)
	} else {
		fmt.Fprintf(o.Streams.ErrOut, "This deletes %s in namespace %q at the broker.\n", d.What, o.Namespace)
	}
	return cmdutil.Confirm(o.Prompter, o.Streams.ErrOut, o.Yes, cmdutil.NeedsYes("deprovision"))
}

// deprovisionProgress shows the drives of a deprovision, each binding's and then the
// instance's, each with a progress of its own (its own line and clock): a note ends the
// current one, and so does a result about another record.
type deprovisionProgress struct {
	streams cmdutil.IOStreams
	p       *Progress
	record  string
}

func newDeprovisionProgress(streams cmdutil.IOStreams) *deprovisionProgress {
	return &deprovisionProgress{streams: streams}
}

func (p *deprovisionProgress) show(r engine.Result) {
	key := recordOf(r)
	if key != "" && p.record != "" && key != p.record {
		p.done()
	}
	if key != "" {
		p.record = key
	}
	if p.p == nil {
		p.p = NewProgress(p.streams)
	}
	p.p.Show(r)
}

// note prints a line of the deprovision; the next drive's progress starts from it.
func (p *deprovisionProgress) note(line string) {
	p.done()
	fmt.Fprintln(p.streams.ErrOut, iostreams.SafeText(line))
	p.p = NewProgress(p.streams)
}

// done ends the current drive's progress.
func (p *deprovisionProgress) done() {
	if p.p != nil {
		p.p.Done()
	}
	p.p, p.record = nil, ""
}

// recordOf names the record a result is about, or "".
func recordOf(r engine.Result) string {
	switch {
	case r.Binding != nil:
		return "binding/" + r.Binding.Name
	case r.Instance != nil:
		return "instance/" + r.Instance.Name
	}
	return ""
}
