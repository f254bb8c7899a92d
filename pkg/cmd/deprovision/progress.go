package deprovision

import (
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// progress shows the drives of a deprovision, each binding's and then the instance's,
// each with a progress of its own (its own line and clock): a note ends the current one,
// and so does a result about another record.
type progress struct {
	streams cmdutil.IOStreams
	p       *lifecycle.Progress
	record  string
}

func newProgress(streams cmdutil.IOStreams) *progress { return &progress{streams: streams} }

func (p *progress) show(r engine.Result) {
	key := recordOf(r)
	if key != "" && p.record != "" && key != p.record {
		p.done()
	}
	if key != "" {
		p.record = key
	}
	if p.p == nil {
		p.p = lifecycle.NewProgress(p.streams)
	}
	p.p.Show(r)
}

// note prints a line of the deprovision; the next drive's progress starts from it.
func (p *progress) note(line string) {
	p.done()
	fmt.Fprintln(p.streams.ErrOut, line)
	p.p = lifecycle.NewProgress(p.streams)
}

// done ends the current drive's progress.
func (p *progress) done() {
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
