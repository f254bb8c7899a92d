// Package wait implements "kubectl catalog wait".
package wait

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

var waitLong = cmdutil.LongDesc(`
	Wait for what is under way on service instances and bindings: a provision,
	update, bind or rotation until the record is Ready (--for=condition=Ready,
	the default), or a deprovision or unbind until the record is gone
	(--for=delete), however it was started: by a command without --wait, by
	one that was interrupted or ran out of time, or by "kubectl catalog apply".

	wait does what --wait does: it drives the record itself, polling the broker
	and finishing the operation (writing the binding's Secret, say), with the
	claim that keeps reconcile from driving it meanwhile; if reconcile or
	another command holds the claim, it waits until it is released or the record
	changes. It starts nothing new: waiting for an instance that is not being
	deprovisioned to go is refused.

	Records are named as TYPE/NAME (instance/db, binding/db-creds), or as TYPE
	followed by names, in the namespace of -n. They are waited for one after
	the other, and the command stops at the first that fails; --timeout bounds
	the whole command (0 or -1: no limit). For each, a line on standard output
	says that it is ready ("instance/db condition met") or gone
	("instance/db deleted").

	Exit codes: 0 when every record is as asked; 1 when one is not and will not
	be without you (its operation failed or was refused, it was deleted while
	waiting for it to be ready, or it was not found); 124 when --timeout ran out
	(the operation goes on); 130 when interrupted (Ctrl-C).`)

var waitExample = cmdutil.Examples(`
	# Wait for the update of instance db started without --wait
	kubectl catalog update db --plan standard
	kubectl catalog wait instance/db --for=condition=Ready

	# Wait for a provision in namespace team-a, for at most 10 minutes
	kubectl catalog wait instance/db --for=condition=Ready --timeout 10m -n team-a

	# Wait for instance db and its binding db-creds
	kubectl catalog wait instance/db binding/db-creds

	# Wait for a deprovision started without --wait to finish
	kubectl catalog deprovision db --yes
	kubectl catalog wait instance/db --for=delete`)

// Target is one record to wait for.
type Target struct {
	// Kind is v1alpha1.KindServiceInstance or v1alpha1.KindServiceBinding.
	Kind string
	Name string
}

func (t Target) String() string { return kindArg(t.Kind) + "/" + t.Name }

func kindArg(kind string) string {
	if kind == v1alpha1.KindServiceBinding {
		return "binding"
	}
	return "instance"
}

// Options are the options of wait.
type Options struct {
	Args     []string
	For      string
	Timeout  time.Duration
	Interval time.Duration

	// Targets and Condition are what Validate parsed from Args and For.
	Targets   []Target
	Condition engine.WaitFor

	cmdutil.Clients
}

// NewCmdWait returns the wait command. runF, when not nil, is called with the completed
// options instead of Run (for tests of the flags).
func NewCmdWait(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Clients: cmdutil.Clients{Streams: f.IOStreams}}
	cmd := &cobra.Command{
		Use:     "wait (TYPE/NAME | TYPE NAME)... [--for=condition=Ready | --for=delete] [--timeout DURATION]",
		Short:   "Wait for what is under way on instances and bindings, driving it",
		Long:    waitLong,
		Example: waitExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmdutil.UsageErrorf("%s needs what to wait for, such as instance/db or binding/db-creds: see %q", cmd.CommandPath(), cmd.CommandPath()+" --help")
			}
			return nil
		},
		ValidArgsFunction: complete.Records(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	cmd.Flags().StringVar(&o.For, "for", string(engine.WaitForReady), "What to wait for: condition=Ready (the operation under way finished and the record is ready) or delete (the record is gone).")
	complete.Register(cmd, "for", complete.Fixed(string(engine.WaitForReady), string(engine.WaitForDelete)))
	o.Timeout = 5 * time.Minute
	cmd.Flags().Var((*cmdutil.WaitTimeout)(&o.Timeout), "timeout", "How long to wait for all the records, e.g. 10m; 0 or -1 waits without limit. An answer of the broker that came in time is recorded first; the operations go on after a timeout.")
	cmd.Flags().DurationVar(&o.Interval, "interval", 2*time.Second, "Shortest interval between polls of the broker when it sends no Retry-After.")
	return cmd
}

// Validate checks the arguments and flags without I/O. It changes nothing.
func (o *Options) Validate() error {
	c, err := ParseFor(o.For)
	if err != nil {
		return err
	}
	o.Condition = c
	if o.Interval <= 0 {
		return cmdutil.UsageErrorf("--interval must be positive, not %s", o.Interval)
	}
	o.Targets, err = ParseTargets(o.Args)
	return err
}

// ParseFor parses --for: condition=Ready (with an optional =true; the condition's name
// and value in any case) or delete.
func ParseFor(v string) (engine.WaitFor, error) {
	kind, rest, _ := strings.Cut(v, "=")
	switch strings.ToLower(kind) {
	case "delete":
		if rest == "" && !strings.Contains(v, "=") {
			return engine.WaitForDelete, nil
		}
	case "condition":
		name, value, hasValue := strings.Cut(rest, "=")
		if strings.EqualFold(name, "ready") && (!hasValue || strings.EqualFold(value, "true")) {
			return engine.WaitForReady, nil
		}
		if strings.EqualFold(name, "ready") {
			return "", cmdutil.UsageErrorf("--for=%s: wait waits for the Ready condition to be true only; to see why a record is not ready, run \"kubectl catalog describe\"", v)
		}
	}
	return "", cmdutil.UsageErrorf("--for=%s: give --for=condition=Ready (the operation under way finished, the record ready) or --for=delete (the record gone)", v)
}

// ParseTargets parses the records to wait for: TYPE/NAME arguments, or a TYPE followed
// by names; TYPE is instance or binding (or their plurals and short names).
func ParseTargets(args []string) ([]Target, error) {
	var out []Target
	seen := map[Target]bool{}
	add := func(kind, name, arg string) error {
		if name == "" {
			return cmdutil.UsageErrorf("%q names no %s: give %s/NAME", arg, kindArg(kind), kindArg(kind))
		}
		if p := records.NameProblem(kind, name); p != "" {
			return cmdutil.UsageErrorf("%q is not a valid %s name: %s", name, kindArg(kind), p)
		}
		t := Target{Kind: kind, Name: name}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
		return nil
	}
	if len(args) > 0 && !strings.Contains(args[0], "/") {
		kind, ok := parseKind(args[0])
		if !ok {
			return nil, cmdutil.UsageErrorf("%q is not something to wait for: name it as instance/NAME or binding/NAME (or \"instance NAME...\")", args[0])
		}
		if len(args) == 1 {
			return nil, cmdutil.UsageErrorf("%q names no %s: give %s/NAME, or %s NAME...", args[0], kindArg(kind), kindArg(kind), kindArg(kind))
		}
		for _, a := range args[1:] {
			if strings.Contains(a, "/") {
				return nil, cmdutil.UsageErrorf("%q: after %q give names only, or name every record as TYPE/NAME", a, args[0])
			}
			if err := add(kind, a, a); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for _, a := range args {
		k, name, ok := strings.Cut(a, "/")
		kind, known := parseKind(k)
		if !ok || !known {
			return nil, cmdutil.UsageErrorf("%q is not something to wait for: name it as instance/NAME or binding/NAME", a)
		}
		if err := add(kind, name, a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseKind is the record kind a TYPE argument names.
func parseKind(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "instance", "instances", "inst", "serviceinstance", "serviceinstances":
		return v1alpha1.KindServiceInstance, true
	case "binding", "bindings", "bnd", "servicebinding", "servicebindings":
		return v1alpha1.KindServiceBinding, true
	}
	return "", false
}

// Complete builds the clients: the engine polls a broker at most every --interval.
func (o *Options) Complete(f *cmdutil.Factory) error { return o.Build(f, o.Interval) }

// Run waits for each record in turn (engine.Engine.Wait), within one --timeout, and
// prints a line for each that is as asked.
func (o *Options) Run(ctx context.Context) error {
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(o.Timeout)
	}
	for _, t := range o.Targets {
		follow, done := lifecycle.NewFollow(o.Streams, lifecycle.WaitFlags{Wait: true})
		follow.Timeout = 0
		if !deadline.IsZero() {
			// Still positive when the time is up: the wait then times out at once,
			// saying where the record stands.
			follow.Timeout = max(time.Until(deadline), time.Millisecond)
		}
		_, err := o.Engine.Wait(ctx, engine.WaitRequest{Kind: t.Kind, Namespace: o.Namespace, Name: t.Name, For: o.Condition, Follow: follow})
		done()
		if err != nil {
			return err
		}
		if o.Condition == engine.WaitForDelete {
			fmt.Fprintf(o.Streams.Out, "%s deleted\n", t)
		} else {
			fmt.Fprintf(o.Streams.Out, "%s condition met\n", t)
		}
	}
	return nil
}
