// Package get implements "kubectl catalog get" and its subcommands: brokers, classes,
// plans, instances and bindings, one file each.
package get

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/watchrecords"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// NewCmdGet returns the get command with the brokers, classes and plans subcommands.
// Add others with AddCommand.
func NewCmdGet(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.Group(&cobra.Command{
		Use:   "get",
		Short: "List brokers, classes, plans and other records",
		Long: cmdutil.LongDesc(`
			List kubectl-catalog's records as tables, or in any -o format.`),
		Example: cmdutil.Examples(`
			# List brokers, then the plans of class postgres
			kubectl catalog get brokers
			kubectl catalog get plans -c postgres`),
	}, NewCmdGetBrokers(f, nil), NewCmdGetClasses(f, nil), NewCmdGetPlans(f, nil))
}

// Options are what get brokers, classes and plans share.
type Options struct {
	Names         []string
	AllNamespaces bool
	Broker        string
	Class         string
	Output        *printers.OutputFlags
	List          printers.ListFlags
	Watch         watchrecords.Flags

	Namespace        string
	CatalogNamespace string
	Reader           *records.Reader
	Streams          cmdutil.IOStreams
	Now              func() time.Time

	watcher *records.Watcher // to watch with
}

func newOptions(f *cmdutil.Factory) *Options {
	return &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(true), Now: f.Now}
}

// Validate checks the flags without any I/O; it changes nothing.
func (o *Options) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	return validateList(o.List)
}

// validateList checks the list flags on a copy of them, leaving l's parsed selector
// and sort expression to Complete.
func validateList(l printers.ListFlags) error { return l.Validate() }

// Complete builds the reader and finds the namespaces.
func (o *Options) Complete(f *cmdutil.Factory, args []string) error {
	o.Names = args
	if err := o.List.Validate(); err != nil {
		return err
	}
	ns, err := f.UserNamespace()
	if err != nil {
		return err
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Reader = ns, f.CatalogNamespace, r
	if o.Watch.On() {
		if o.watcher, err = f.Watcher(); err != nil {
			return err
		}
	}
	return nil
}

// listing is the shape of the options of every get subcommand.
type listing interface {
	Validate() error
	Complete(f *cmdutil.Factory, args []string) error
}

// runE validates and completes o, then runs it: with runF when given (tests check the
// parsed flags that way), else with run.
func runE[O listing](f *cmdutil.Factory, o O, runF func(O) error, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Validate(); err != nil {
			return err
		}
		if err := o.Complete(f, args); err != nil {
			return err
		}
		if runF != nil {
			return runF(o)
		}
		return run(cmd.Context())
	}
}

func (o *Options) noneFound(w io.Writer, what string) {
	if o.AllNamespaces {
		fmt.Fprintf(w, "No %s found.\n", what)
		return
	}
	fmt.Fprintf(w, "No %s found in namespace %q or the catalog namespace %q.\n", what, o.Namespace, o.CatalogNamespace)
}

func (o *Options) namespaces() []string {
	switch {
	case o.AllNamespaces:
		return []string{""}
	case o.Namespace == o.CatalogNamespace:
		return []string{o.Namespace}
	}
	return []string{o.CatalogNamespace, o.Namespace}
}

func matchName(names []string, candidates ...string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		for _, c := range candidates {
			if n == c {
				return true
			}
		}
	}
	return false
}

// missing returns an error for the first name that matched nothing.
func missing(kind string, names []string, found map[string]bool, known []string) error {
	for _, n := range names {
		if !found[n] {
			return notFound(kind, n, known)
		}
	}
	return nil
}

// allMissing returns an error naming, one a line, every name that matched nothing: get
// prints what it found and fails for the rest, as kubectl get does.
func allMissing(kind string, names []string, found map[string]bool, known []string) error {
	var errs []error
	for _, n := range names {
		if !found[n] {
			errs = append(errs, notFound(kind, n, known))
		}
	}
	return errors.Join(errs...)
}

// notFound is a name that matched nothing, with the closest of known as a suggestion.
func notFound(kind, name string, known []string) error {
	msg := fmt.Sprintf("%s %q not found", kind, name)
	if s := marketplace.Suggest(name, known); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return &records.NotFoundError{Msg: msg}
}
