// Package adopt implements "kubectl catalog adopt": a namespace's records written before
// the trust policy are re-stamped as the runner's own.
package adopt

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

var adoptLong = cmdutil.LongDesc(`
	Make the records of a namespace written before the trust policy your own,
	so that "kubectl catalog reconcile" can act on them.

	Records written before "kubectl catalog init" (or "reconcile install")
	put the trust policy in force carry no verified author: anyone who could
	write ConfigMaps in the namespace may have written them, and reconcile
	refuses what needs their author's authority. adopt writes each of them
	again with you as its author, under the current trust token, but only a
	record whose spec you could have written yourself: it is checked against
	your rights as the command writing that spec would be (the Secrets it
	names readable by you, its broker usable, its plan allowed in the
	namespace, the workloads it projects into changeable by you, its
	sharing grants yours to give, a binding to an instance of another
	namespace shared with this one). The spec is never changed, only the
	author stamp.

	Adopting a record vouches for it: from then on reconcile acts for it on
	your authority, so a Secret you may read goes where the record says
	(a broker's credentials to its URL, parameters from Secrets to the
	instance's broker, keys copied into a binding's Secret, workloads
	changed). Before anything is written, adopt lists every record it would
	adopt with exactly what it sends where, and asks (--yes: without
	asking; needed outside a terminal). A no changes nothing.

	A record that fails a check is listed with the reason and left as it
	is, and adopt exits 1; one whose author is verified already is left
	alone, unless it is being deleted and its author is someone else.
	An administrator finishes a namespace already Terminating the same
	way: its deletion removed its RoleBindings first, so reconcile can no
	longer check its records against their authors' rights and refuses
	them, naming this command. adopt -n NAMESPACE makes the records whose
	spec she could have written hers, then "kubectl catalog reconcile -n
	NAMESPACE" finishes them. --dry-run shows what would change and writes
	nothing.`)

var adoptExample = cmdutil.Examples(`
	# See which records of namespace team-a would become yours
	kubectl catalog adopt -n team-a --dry-run

	# Adopt them (after reading what each sends where), then let reconcile finish their work
	kubectl catalog adopt -n team-a
	kubectl catalog reconcile -n team-a

	# Adopt them without being asked (a script): check the dry run's list first
	kubectl catalog adopt -n team-a --yes`)

// Options are the options of adopt.
type Options struct {
	DryRun    cmdutil.DryRunStrategy
	Yes       bool
	Namespace string
	Engine    *engine.Engine
	Prompter  prompt.Prompter
	Streams   cmdutil.IOStreams
}

// NewCmdAdopt returns the adopt command. runF, when not nil, is called with the completed
// options instead of Run.
func NewCmdAdopt(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams}
	cmd := &cobra.Command{
		Use:               "adopt [-n NAMESPACE] [--dry-run] [--yes]",
		Short:             "Make a namespace's records written before the trust policy your own, where you could have written them",
		Long:              adoptLong,
		Example:           adoptExample,
		Args:              cmdutil.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the records")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Adopt without asking, vouching for what the records send where (needed when not in a terminal).")
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error { return nil }

// Complete builds the engine.
func (o *Options) Complete(f *cmdutil.Factory) (err error) {
	o.Namespace, o.Engine, _, err = f.VerbClients(cmdutil.IOStreams{}, 0, nil)
	o.Prompter = f.Prompter(o.Streams, o.Prompter)
	return err
}

// Run adopts the records and prints what became of each.
func (o *Options) Run(ctx context.Context) error {
	res, err := o.Engine.AdoptAuthorship(ctx, engine.AdoptAuthorshipRequest{Namespace: o.Namespace, DryRun: o.DryRun.Engine(),
		Confirm: cmdutil.ConfirmVouches(o.Prompter, o.Streams.ErrOut, o.Yes, "adopt")})
	if err != nil {
		return err
	}
	if o.DryRun.Enabled() {
		var vs []engine.Vouch
		for _, r := range res.Records {
			if r.Vouch != nil {
				vs = append(vs, *r.Vouch)
			}
		}
		cmdutil.PrintVouches(o.Streams.ErrOut, vs)
	}
	if len(res.Records) == 0 {
		fmt.Fprintf(o.Streams.ErrOut, "No records in namespace %q.\n", o.Namespace)
		return nil
	}
	t := printers.NewTable(o.Streams.Out, "KIND", "NAME", "AUTHOR", "OUTCOME", "DETAIL")
	counts := map[string]int{}
	for _, r := range res.Records {
		outcome := r.Outcome
		if o.DryRun.Enabled() && outcome == engine.AuthorshipAdopted {
			outcome = "would be adopted"
		}
		counts[r.Outcome]++
		was := r.Was
		if was == "" {
			was = "<none>"
		}
		t.Append(r.Kind, r.Name, was, outcome, r.Detail)
	}
	if err := t.Render(); err != nil {
		return err
	}
	suffix := ""
	if o.DryRun.Enabled() {
		suffix = " (dry run: nothing was written)"
	}
	fmt.Fprintf(o.Streams.ErrOut, "%d records in namespace %q: %d adopted as %s's, %d verified already, %d refused%s\n",
		len(res.Records), o.Namespace, counts[engine.AuthorshipAdopted], res.Runner, counts[engine.AuthorshipVerified], counts[engine.AuthorshipRefused], suffix)
	if res.Refused() > 0 {
		fmt.Fprintln(o.Streams.ErrOut, "the refused records are left as they were: their owner, who may do what their spec names, adopts them, or deletes and writes them again")
		return &cmdutil.SilentError{Code: cmdutil.ExitError}
	}
	return nil
}
