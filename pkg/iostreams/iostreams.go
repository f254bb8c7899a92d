// Package iostreams holds what a command prints with, below every package of the
// command line: its standard streams, whether they are terminals, and the usage error
// (a mistake in how the command was invoked). It imports nothing of the project.
package iostreams

import (
	"io"
	"os"

	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// IOStreams are the command's standard streams plus what it needs to know
// about them: progress lines and prompts only make sense on a terminal.
type IOStreams struct {
	genericiooptions.IOStreams
	// InTerminal and OutTerminal report whether In and Out are terminals.
	InTerminal, OutTerminal bool
	// ErrTerminal reports whether ErrOut is a terminal (live progress lines).
	ErrTerminal bool
}

// NewStd returns streams on the process's stdin, stdout and stderr.
func NewStd() IOStreams {
	return IOStreams{
		IOStreams:   genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		InTerminal:  isTerminal(os.Stdin),
		OutTerminal: isTerminal(os.Stdout),
		ErrTerminal: isTerminal(os.Stderr),
	}
}

// NewTest returns streams on the given buffers; neither is a terminal.
func NewTest(in io.Reader, out, errOut io.Writer) IOStreams {
	return IOStreams{IOStreams: genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}}
}

// CanPrompt reports whether the command may ask the user questions.
func (s IOStreams) CanPrompt() bool { return s.InTerminal && s.OutTerminal }

// OnErrOut are the streams with ErrOut as their output too: a command whose output may be
// -o json asks its questions there, like its progress lines.
func (s IOStreams) OnErrOut() IOStreams {
	s.Out, s.OutTerminal = s.ErrOut, s.ErrTerminal
	return s
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
