package lifecycle

import (
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// Following shows what an engine operation says while it follows the records it wrote,
// one after the other: the progress of each, and the lines it notes. A line ends the
// progress shown so far, and the next record's progress starts after it, timed from
// then.
type Following struct {
	streams cmdutil.IOStreams
	p       *Progress
}

// NewFollowing shows on streams' error output.
func NewFollowing(streams cmdutil.IOStreams) *Following {
	return &Following{streams: streams, p: NewProgress(streams)}
}

// Follow is how the operation follows its records for the wait flags w, reporting here.
func (f *Following) Follow(w WaitFlags) engine.Follow {
	follow := w.Follow(nil)
	follow.Progress = func(r engine.Result) { f.p.Show(r) }
	follow.Note = func(line string) { f.Say("%s\n", line) }
	return follow
}

// Say ends the progress shown so far and prints a line of its own.
func (f *Following) Say(format string, args ...any) {
	f.Done()
	fmt.Fprintf(f.streams.ErrOut, format, args...)
}

// Done ends the progress shown so far; what follows starts a new one.
func (f *Following) Done() {
	f.p.Done()
	f.p = NewProgress(f.streams)
}
