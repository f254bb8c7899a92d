// Package reconcile implements "kubectl catalog reconcile".
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

var reconcileLong = cmdutil.LongDesc(`
	Finish pending work on brokers, instances and bindings: operations still
	running at a broker, commands that were interrupted, calls that failed
	while a broker was down, and deletions (by "deprovision" or "unbind", a
	plain "kubectl delete configmap", or a namespace being deleted).

	reconcile lists the records labelled pending or being deleted and drives
	each with the step function the verbs use, --workers broker calls at once.
	Records another command or reconcile holds a claim on are skipped. A run
	by hand waits for the retries and polls due within --retry-horizon,
	shows its progress on stderr and stops at the first Ctrl-C (exit 130);
	--max-duration bounds every run. It acts on a record only with authority
	its author had; --trust-namespace-writers lends your own rights where no
	author can be verified. It prints a summary (-o json|yaml) and exits 1
	only when a person must look.

	"reconcile install" runs it in the cluster. With --serve it runs in a
	loop, serving /healthz and /metrics; with --shard-group, replicas split
	the records among themselves. See docs/reconcile.md.`)

var reconcileExample = cmdutil.Examples(`
	# Finish what is pending in the current namespace
	kubectl catalog reconcile

	# Show what would be done in every namespace, without calling brokers or writing
	kubectl catalog reconcile -A --dry-run

	# Also rotate the credentials of bindings due for renewal
	kubectl catalog reconcile -A --rotate-due

	# As a CronJob does it: bounded in time, one of three shards, a JSON summary
	kubectl catalog reconcile -A --max-duration 4m --retry-horizon 0 --shard 0/3 --workers 16 -o json

	# As a Deployment does it, one of several replicas splitting the records
	kubectl catalog reconcile -A --serve --shard-group catalog-reconcile`)

// Options are the options of reconcile.
type Options struct {
	AllNamespaces bool
	Workers       int
	MaxDuration   time.Duration
	ShardFlag     string
	DryRun        cmdutil.DryRunStrategy
	RotateDue     bool
	Interval      time.Duration
	// Output is -o: json or yaml, a table without it.
	Output *printers.OutputFlags
	// RetryHorizon: a record whose next retry or poll is due within this is waited
	// for, one due later is left for a later run (0: none, as long as MaxDuration
	// allows; see reconcile.Options.RetryHorizon).
	RetryHorizon time.Duration
	// FullPassInterval: how often a run lists every record's metadata (see
	// reconcile.Options.FullPassEvery).
	FullPassInterval time.Duration
	// CatalogNamespace holds the marker of the last full pass (Complete sets it).
	CatalogNamespace string
	Serve            ServeFlags
	// TrustUnverifiedAuthors acts with the user's own rights on records whose author
	// cannot be verified.
	TrustUnverifiedAuthors bool
	// Egress is the egress rule for namespace-scoped brokers.
	Egress EgressFlags

	Shard      reconcile.Shard
	Namespace  string
	Reconciler *reconcile.Reconciler
	Streams    cmdutil.IOStreams
	// Verbose (-v 1 or more) reports each step.
	Verbose bool
	// showProgress shows the run's progress on the error output (Complete sets it).
	showProgress bool
	// Prompter asks, at a terminal, whether to act with the user's own rights on the
	// records no one vouches for (nil: not at a terminal, never asks).
	Prompter prompt.Prompter
}

// NewCmdReconcile returns the reconcile command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdReconcile(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: newOutputFlags()}
	cmd := &cobra.Command{
		Use:     "reconcile [-n NAMESPACE | -A]",
		Short:   "Finish pending work on brokers, instances and bindings",
		Long:    reconcileLong,
		Example: reconcileExample,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("trust-unverified-authors") {
				// cobra keeps pflag's own deprecation notice to itself.
				fmt.Fprintln(o.Streams.ErrOut, "Warning: --trust-unverified-authors has been deprecated, use --trust-namespace-writers")
			}
			scaleRateLimits(f, o.Workers, cmd.Flags().Changed("qps"), cmd.Flags().Changed("burst"))
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Reconcile every namespace (the catalog namespace included).")
	fs.IntVar(&o.Workers, "workers", 8, "How many broker calls are in flight at once. A step holds one of these workers only around its broker call, so up to twice as many records are stepped at once (their reads and writes of records overlap other records' calls; one at a time with --workers 1), and records waiting for their next poll or retry hold none. The client's rate limits follow it (30 queries a second per worker, the burst twice that, never below the defaults) unless --qps or --burst is given.")
	fs.DurationVar(&o.MaxDuration, "max-duration", 5*time.Minute, "Bound of the run; calls under way finish, claims are released and the summary says what is left. 0: no bound.")
	fs.DurationVar(&o.RetryHorizon, "retry-horizon", DefaultRetryHorizon, "A record whose next retry or poll is due within this is waited for (also one set before the run); one due later is reported as waiting until then, and the run ends when nothing can progress sooner. 0: wait for retries as long as --max-duration allows, and leave a record not due when the run starts for a later run (the CronJob of \"reconcile install\" passes 0; --serve defaults to 0).")
	fs.DurationVar(&o.FullPassInterval, "full-pass-interval", DefaultFullPassInterval, "How often a run lists the metadata of every record in scope (a full pass), which finds a record deleted by \"kubectl delete configmap\"; the runs in between list only the records labelled pending and those of namespaces being deleted. The last full pass over every namespace is recorded in the catalog namespace, for the next processes. 0 (the default): every run; at scale, 10m or more.")
	fs.StringVar(&o.ShardFlag, "shard", "", "Only the records of shard i of n (i/n, 0-based, by a stable hash of namespace/name), to split the work across CronJobs.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "")
	cmd.Flags().Lookup("dry-run").Usage = `Must be "none" or "client". client: print what would be done, contacting no broker and writing nothing. "server" is not offered: reconcile writes only status, which a server-side dry run cannot show. A bare --dry-run means client.`
	fs.BoolVar(&o.RotateDue, "rotate-due", false, "Also rotate the credentials of bindings whose renew_before has passed (lists every binding in scope).")
	fs.DurationVar(&o.Interval, "interval", 2*time.Second, "Shortest interval between polls of an operation when the broker sends no Retry-After.")
	o.Output.AddFlags(cmd)
	fs.BoolVar(&o.TrustUnverifiedAuthors, "trust-namespace-writers", false, "Where a record's author cannot be verified (no trust policy), act with your own rights instead of refusing what needs the author's: you trust everyone who may write ConfigMaps in the namespaces of the run. Not with --serve.")
	// The flag's former name, hidden; it still works, with a warning.
	fs.BoolVar(&o.TrustUnverifiedAuthors, "trust-unverified-authors", false, "")
	_ = fs.MarkDeprecated("trust-unverified-authors", "use --trust-namespace-writers")
	o.Egress.AddFlags(cmd)
	o.Serve.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("shard", cobra.FixedCompletions([]string{"0/2", "1/2", "0/3", "1/3", "2/3"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("workers", cobra.FixedCompletions([]string{"4", "8", "16", "32"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	cmd.AddCommand(NewCmdInstall(f), NewCmdUninstall(f))
	return cmd
}

// newOutputFlags is reconcile's -o: json or yaml, a table without it.
func newOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags([]string{"json", "yaml"}, "", "Output format. One of: (json, yaml); default a table.", func(format string) error {
		return cmdutil.UsageErrorf("--output %q: use json or yaml (default: a table)", format)
	})
}

// Validate checks the flags without I/O; it changes nothing (Complete parses --shard
// and sets --serve's defaults).
func (o *Options) Validate() error {
	if o.Workers < 1 {
		return cmdutil.UsageErrorf("--workers must be at least 1, not %d", o.Workers)
	}
	if o.MaxDuration < 0 {
		return cmdutil.UsageErrorf("--max-duration must not be negative, not %s", o.MaxDuration)
	}
	if o.Interval <= 0 {
		return cmdutil.UsageErrorf("--interval must be positive, not %s", o.Interval)
	}
	if o.RetryHorizon < 0 {
		return cmdutil.UsageErrorf("--retry-horizon must not be negative, not %s (0: no horizon)", o.RetryHorizon)
	}
	if o.FullPassInterval < 0 {
		return cmdutil.UsageErrorf("--full-pass-interval must not be negative, not %s (0: every run lists every record)", o.FullPassInterval)
	}
	if o.Output != nil {
		if err := o.Output.Validate(); err != nil {
			return err
		}
	}
	if o.ShardFlag != "" {
		if _, err := reconcile.ParseShard(o.ShardFlag); err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
	}
	if o.Serve.Enabled && o.TrustUnverifiedAuthors {
		return cmdutil.UsageErrorf("--trust-namespace-writers is for a run by hand, not --serve: reconcile in the cluster acts only with the authority of records' verified authors")
	}
	return o.validateServe()
}

// Complete parses --shard, sets --serve's defaults and builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	if o.ShardFlag != "" {
		s, err := reconcile.ParseShard(o.ShardFlag)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		o.Shard = s
	}
	o.serveDefaults()
	if !o.AllNamespaces {
		ns, _, err := f.Namespace()
		if err != nil {
			return err
		}
		o.Namespace = ns
	}
	// reconcile calls namespace-scoped brokers, whose URLs tenants choose, from its own
	// network position: the egress rule applies to every broker client it builds.
	rule, err := o.Egress.Rule(f)
	if err != nil {
		return err
	}
	f.UseBrokerOptions(brokerclient.WithNamespaceBrokerEgress(f.CatalogNamespace, rule))
	o.CatalogNamespace = f.CatalogNamespace
	for _, m := range o.Egress.Undetected {
		if len(o.Egress.Deny) > 0 {
			break // the administrator gave the ranges
		}
		fmt.Fprintf(o.Streams.ErrOut, "Note: the egress rule of namespace-scoped brokers does not deny %s\n", m)
	}
	rec, err := f.Reconciler(cmdutil.EngineOptions{
		PollInterval: o.Interval, Holder: cmdutil.HolderName("reconcile"), TestKnobs: true,
		TargetCacheTTL: reconcile.TargetCacheTTL, Unattended: true, EventWriters: o.Workers,
	}, func(format string, args ...any) { fmt.Fprintf(o.Streams.ErrOut, format+"\n", args...) })
	if err != nil {
		return err
	}
	o.Verbose = f.Verbosity > 0
	o.showProgress = true
	// The question goes to the error output, like the progress line: the output may be
	// -o json.
	o.Prompter = f.Prompter(o.Streams.OnErrOut(), o.Prompter)
	o.Reconciler = rec
	return o.completeServe(f)
}

// Run reconciles and prints the summary.
func (o *Options) Run(ctx context.Context) error {
	setMemoryLimit()
	defer startHeapProfile()()
	if o.Serve.Enabled {
		return o.runServe(ctx)
	}
	// The first Ctrl-C (or SIGTERM) cancels ctx: the run then starts nothing new, and
	// lets the steps under way finish their broker call and record its outcome, with
	// a context of its own. A second one exits at once (see main).
	opts := reconcile.Options{
		Namespace: o.Namespace, Workers: o.Workers, MaxDuration: o.MaxDuration, Shard: o.Shard, DryRun: o.DryRun.Enabled(),
		RotateDue: o.RotateDue, RetryHorizon: o.RetryHorizon, Interrupt: ctx.Done(),
		TrustUnverifiedAuthors: o.TrustUnverifiedAuthors,
		FullPassEvery:          o.FullPassInterval, CatalogNamespace: o.CatalogNamespace,
	}
	lend, err := o.askToLend(ctx, opts)
	if err != nil {
		return err
	}
	opts.TrustRecords = lend
	var prog *Progress
	if o.showProgress {
		prog = NewProgress(o.Streams.ErrOut, o.Streams.ErrTerminal, o.Verbose)
		opts.Observer = prog
		stop := context.AfterFunc(ctx, prog.Interrupted)
		defer stop()
	}
	sum, err := o.Reconciler.Run(context.WithoutCancel(ctx), opts)
	if prog != nil {
		prog.Stop()
	}
	if err != nil && sum.Items == nil {
		if sum.Interrupted {
			fmt.Fprintln(o.Streams.ErrOut, "interrupted before the pending records were listed: nothing was done")
			return &cmdutil.SilentError{Code: cmdutil.ExitInterrupted}
		}
		return fmt.Errorf("cannot list the pending records: %w", err)
	}
	if perr := Print(o.Streams.Out, o.Streams.ErrOut, o.Output.Format(), sum); perr != nil {
		return perr
	}
	if err != nil {
		return errors.New(listFailedPart(err, "run reconcile again for the others"))
	}
	o.noVoucherHint(sum)
	if sum.Interrupted {
		fmt.Fprintf(o.Streams.ErrOut, "interrupted: %s left, pending as they were (a step under way was finished and recorded); run reconcile again to go on\n", printers.Plural(sum.Left, "record", "records"))
		return &cmdutil.SilentError{Code: cmdutil.ExitInterrupted}
	}
	if sum.Failed() {
		return &cmdutil.SilentError{Code: cmdutil.ExitError}
	}
	return nil
}

// askToLend lists, at a terminal, the records of the run that no one vouches for (no
// trust policy) and that the user's own rights would let it act on, saying what those
// rights would be used for, and asks once whether to (default no). It returns the records
// the user agreed to; none without a terminal, with --trust-namespace-writers (which
// covers them all), with --dry-run, or on a no.
func (o *Options) askToLend(ctx context.Context, opts reconcile.Options) ([]engine.Unvouched, error) {
	if o.Prompter == nil || o.TrustUnverifiedAuthors || o.DryRun.Enabled() || o.Serve.Enabled {
		return nil, nil
	}
	us, err := o.Reconciler.Unvouched(ctx, opts)
	if err != nil || len(us) == 0 {
		// The run lists the work again, and says what failed.
		return nil, nil
	}
	spaces := PrintUnvouched(o.Streams.ErrOut, us)
	which := "this record"
	if len(us) > 1 {
		which = fmt.Sprintf("these %d records", len(us))
	}
	ok, err := o.Prompter.Confirm(fmt.Sprintf("Act on %s with your own rights, trusting everyone who may write ConfigMaps in namespace %s?", which, strings.Join(spaces, ", ")), false)
	if errors.Is(err, prompt.ErrInterrupted) {
		fmt.Fprintln(o.Streams.ErrOut, "interrupted at the question: nothing was done")
		return nil, &cmdutil.SilentError{Code: cmdutil.ExitInterrupted}
	}
	if err != nil || !ok {
		fmt.Fprintln(o.Streams.ErrOut, "Your rights are not lent: what needs their author's authority is refused.")
		return nil, nil
	}
	return us, nil
}

// PrintUnvouched lists the records no one vouches for, each with what acting on it with
// the user's own rights does, and returns their namespaces.
func PrintUnvouched(w io.Writer, us []engine.Unvouched) []string {
	var spaces []string
	fmt.Fprintln(w, "The catalog's trust policy is not in force, so no one vouches for the authors of these records; anyone who may write ConfigMaps in their namespace may have written them. Acting on them takes your own rights:")
	for _, u := range us {
		fmt.Fprintf(w, "  %s %s/%s\n", strings.ToLower(u.Kind), u.Namespace, u.Name)
		for _, l := range u.Lends {
			fmt.Fprintf(w, "      %s\n", l)
		}
		if !slices.Contains(spaces, u.Namespace) {
			spaces = append(spaces, u.Namespace)
		}
	}
	return spaces
}

// noVoucherHint says, after a run that refused records for want of a verified author
// where the runner could have lent them their rights, what does it: the trust policy, or
// --trust-namespace-writers.
func (o *Options) noVoucherHint(sum reconcile.Summary) {
	if o.TrustUnverifiedAuthors {
		return
	}
	var spaces []string
	n := 0
	for _, it := range sum.Items {
		if it.Outcome == reconcile.Refused && strings.Contains(it.Detail, engine.NoVoucher) {
			n++
			if !slices.Contains(spaces, it.Namespace) {
				spaces = append(spaces, it.Namespace)
			}
		}
	}
	if n == 0 {
		return
	}
	were := printers.Plural(n, "record was", "records were")
	fmt.Fprintf(o.Streams.ErrOut, "%s refused because no one vouches for their author: an administrator runs \"kubectl catalog init\" and their owners adopt them (\"kubectl catalog adopt -n NAMESPACE\"), or, trusting everyone who may write ConfigMaps in namespace %s, run again with --trust-namespace-writers\n",
		were, strings.Join(spaces, ", "))
}

// DefaultFullPassInterval is --full-pass-interval's default: every run makes a full pass,
// which finds a record deleted by "kubectl delete configmap" at once.
const DefaultFullPassInterval = 0

// DefaultRetryHorizon is --retry-horizon's default for a run by hand.
const DefaultRetryHorizon = 10 * time.Second

// Print writes the summary: a table (and a line of counts on errOut), JSON or YAML.
func Print(out, errOut io.Writer, format string, sum reconcile.Summary) error {
	if format == "json" || format == "yaml" {
		return printers.PrintData(out, format, sum)
	}
	if len(sum.Items) == 0 {
		_, err := fmt.Fprintln(errOut, "Nothing to reconcile.")
		return err
	}
	t := printers.NewTable(out, "NAMESPACE", "KIND", "NAME", "OUTCOME", "DETAIL")
	for _, it := range sum.Items {
		t.Append(it.Namespace, it.Kind, it.Name, it.OutcomeText(), oneLine(it.Detail))
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(errOut, CountsLine(sum))
	return err
}

// CountsLine says how many records ended how, e.g. "3 records: 2 done, 1 failed".
func CountsLine(sum reconcile.Summary) string {
	var parts []string
	for _, oc := range []reconcile.Outcome{reconcile.Done, reconcile.InProgress, reconcile.Waiting, reconcile.Skipped, reconcile.Refused, reconcile.Failed, reconcile.WouldDrive} {
		if n := sum.Counts[oc]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, oc))
		}
	}
	line := fmt.Sprintf("%s: %s", printers.Plural(len(sum.Items), "record", "records"), strings.Join(parts, ", "))
	if sum.DryRun {
		line += " (dry run: nothing was called or written)"
	}
	if sum.TimeUp {
		line += `; --max-duration ran out: the next run goes on`
	}
	return line
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
