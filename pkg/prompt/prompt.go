// Package prompt asks the user questions in a terminal. Commands depend on the Prompter
// interface only, so tests drive them with a scripted prompter and survey (unmaintained
// upstream) can be swapped out in one place.
package prompt

import (
	"errors"
	"io"
	"os"

	"github.com/AlecAivazis/survey/v2"
	"github.com/AlecAivazis/survey/v2/terminal"
)

// Prompter asks questions.
type Prompter interface {
	// Select asks for one of options.
	Select(message string, options []string, def string) (string, error)
	// Input asks for a line of text; help is shown on "?".
	Input(message, help, def string) (string, error)
	// Confirm asks a yes/no question.
	Confirm(message string, def bool) (bool, error)
	// Secret asks for a value without echoing it.
	Secret(message string) (string, error)
}

// ErrInterrupted is returned when the user pressed Ctrl-C at a prompt.
var ErrInterrupted = errors.New("interrupted at a prompt")

// Survey is a Prompter on a terminal.
type Survey struct {
	in  terminal.FileReader
	out terminal.FileWriter
	err io.Writer
}

// NewSurvey returns a Prompter reading in and writing out, which must be terminals
// (files); anything else falls back to the process's standard streams.
func NewSurvey(in io.Reader, out, errOut io.Writer) *Survey {
	s := &Survey{in: os.Stdin, out: os.Stdout, err: errOut}
	if f, ok := in.(terminal.FileReader); ok {
		s.in = f
	}
	if f, ok := out.(terminal.FileWriter); ok {
		s.out = f
	}
	return s
}

func (s *Survey) opts() survey.AskOpt { return survey.WithStdio(s.in, s.out, s.err) }

func mapErr(err error) error {
	if errors.Is(err, terminal.InterruptErr) {
		return ErrInterrupted
	}
	return err
}

// Select implements Prompter.
func (s *Survey) Select(message string, options []string, def string) (string, error) {
	var out string
	q := &survey.Select{Message: message, Options: options}
	if def != "" {
		q.Default = def
	}
	return out, mapErr(survey.AskOne(q, &out, s.opts()))
}

// Input implements Prompter.
func (s *Survey) Input(message, help, def string) (string, error) {
	var out string
	return out, mapErr(survey.AskOne(&survey.Input{Message: message, Help: help, Default: def}, &out, s.opts()))
}

// Confirm implements Prompter.
func (s *Survey) Confirm(message string, def bool) (bool, error) {
	var out bool
	return out, mapErr(survey.AskOne(&survey.Confirm{Message: message, Default: def}, &out, s.opts()))
}

// Secret implements Prompter: the answer is not echoed.
func (s *Survey) Secret(message string) (string, error) {
	var out string
	return out, mapErr(survey.AskOne(&survey.Password{Message: message}, &out, s.opts()))
}

// Scripted is a Prompter answering from a script, for tests. Each call takes the next
// answer; running out of answers is an error.
type Scripted struct {
	Answers []string
	// Asked records the messages asked, in order.
	Asked []string
}

func (p *Scripted) next(message string) (string, error) {
	p.Asked = append(p.Asked, message)
	if len(p.Answers) == 0 {
		return "", errors.New("unexpected prompt: " + message)
	}
	a := p.Answers[0]
	p.Answers = p.Answers[1:]
	return a, nil
}

// Select implements Prompter.
func (p *Scripted) Select(message string, _ []string, _ string) (string, error) {
	return p.next(message)
}

// Input implements Prompter.
func (p *Scripted) Input(message, _, _ string) (string, error) { return p.next(message) }

// Confirm implements Prompter: "y" or "yes" is true.
func (p *Scripted) Confirm(message string, _ bool) (bool, error) {
	a, err := p.next(message)
	return a == "y" || a == "yes", err
}

// Secret implements Prompter.
func (p *Scripted) Secret(message string) (string, error) { return p.next(message) }
