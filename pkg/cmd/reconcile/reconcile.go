// Package reconcile implements "kubectl catalog reconcile".
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	Finish pending work on instances and bindings: operations still running
	at a broker, commands that were interrupted, calls that failed while a
	broker was down, and deletions (by "deprovision" or "unbind", a plain
	"kubectl delete configmap", or a namespace being deleted, which stays
	Terminating until this has unbound and deprovisioned what it held).

	reconcile finds its work in one metadata-only list of the records
	labelled pending or being deleted, reads just those, and drives each with
	the same step function the verbs use. --workers bounds the steps taken at
	once; a record waiting for its next poll or retry waits in a queue, not
	on a worker, so a few workers keep many operations going. Records another
	command or reconcile is working on (a live claim) are skipped. An
	instance being deleted has its bindings unbound first, in the same run.
	Brokers whose catalog fetch is requested, due to be retried, or due by
	--relist-interval are synced.

	A run by hand waits for what is due soon, and ends as soon as nothing can
	progress within --retry-horizon (default 10s): a record whose next retry
	or poll is due within the horizon (also one an earlier command or run
	set, such as the next poll of a provision stopped with Ctrl-C) waits in
	the queue and is taken up then, never sooner than the broker or the
	backoff asked. One due later is not waited for, but reported as "waiting
	until T" with the attempt and the last error (or "in progress" with the
	next poll), and a later run takes it up. An instance being deleted is
	stepped again when one of its bindings is gone, and reported as waiting
	for them once none can progress in the run. --max-duration bounds the run
	in any case. The CronJob of "reconcile install" passes --retry-horizon 0,
	and --serve defaults to it: retries and polls then go on for as long as
	--max-duration allows, and a record whose next retry or poll is not due
	when the run starts is left for a later run.

	On a terminal it shows its progress on one line of stderr, redrawn as it
	goes (records finished, in progress and waiting, the record and the step
	under way, the time elapsed) and cleared before the summary; otherwise it
	logs a timestamped line on stderr per record as it is finished. -v (1 or
	more) also shows each step and each wait. The first Ctrl-C (or SIGTERM)
	starts nothing new, lets the broker calls under way finish and their
	outcome be recorded, prints the summary and how many records were left,
	and exits 130; a second one exits at once.

	With --rotate-due it also lists the bindings in full to find those whose
	credentials the broker asked to renew (renew_before has passed), and
	rotates them: new credentials are bound and written to the same Secret,
	then the old ones are unbound. Without it, a binding it meets anyway
	whose rotation is due is reported as waiting, and left as it is.

	It acts on a record only with authority its author had: a Secret a record
	names is read, and a workload changed, only when the API server says the
	record's author may (see docs/security.md). Where no author can be
	verified (the trust policy that "kubectl catalog init" installs is not in
	force), what needs one is refused, visibly; --trust-namespace-writers acts
	with your own rights instead, trusting everyone who may write ConfigMaps
	in the namespaces of the run (--serve and the CronJob never do). At a
	terminal, without the flag, reconcile first lists the records of the run
	it could act on only with your rights, with what they would do for each
	(which Secret goes to which broker URL, which workload is changed), and
	asks once whether to (default no): a yes acts with your rights on those
	records only, for this run.

	It prints a summary (-o json|yaml for monitoring) and exits 1 only when a
	person must look (a terminal failure, or errors talking to the API
	server); work merely still in progress exits 0. "reconcile install"
	runs it in the cluster from a CronJob.

	With --serve it runs in a loop instead, as a Deployment: a run at least
	every --serve-interval, sooner when a retry or poll is due or when a watch
	sees a record become pending or deleted. It serves /healthz (200 while the
	API server answers and the last run ended recently and could list its
	work, 503 otherwise) and Prometheus /metrics on --listen, logs one line per
	run (time, duration, counts) to stderr, and on SIGTERM lets the run under
	way finish within --shutdown-grace and exits 0.

	With --serve --shard-group NAME, replicas of one group split the records
	among themselves: each keeps a Lease in the catalog namespace, renewed
	every third of --lease-duration, and takes up only its share of the
	records (a stable hash of namespace/name over the live members). A
	replica that stops deletes its Lease; one that dies is noticed within
	--lease-duration; either way the others take up its share at once. A
	record's claim still keeps two processes from calling a broker about it
	at the same time (see docs/reconcile.md).`)

var reconcileExample = cmdutil.Examples(`
	# Finish what is pending in the current namespace
	kubectl catalog reconcile

	# The same, showing each step and each wait
	kubectl catalog reconcile -v 1

	# Keep retrying within the run for up to 2 minutes, as a CronJob's run does
	kubectl catalog reconcile --retry-horizon 0 --max-duration 2m

	# Everything, in every namespace
	kubectl catalog reconcile -A

	# Show what would be done, without calling brokers or writing
	kubectl catalog reconcile -A --dry-run

	# Your own namespace, on a cluster without the trust policy, with your own rights
	kubectl catalog reconcile -n team-a --trust-namespace-writers

	# Also rotate the credentials of bindings due for renewal
	kubectl catalog reconcile -A --rotate-due

	# As a CronJob does it: bounded in time, one of three shards, a JSON summary
	kubectl catalog reconcile -A --max-duration 4m --retry-horizon 0 --shard 0/3 --workers 16 -o json

	# As a Deployment does it: in a loop, with /healthz and /metrics on port 8080
	kubectl catalog reconcile -A --serve

	# One of several replicas splitting the records among themselves
	kubectl catalog reconcile -A --serve --shard-group catalog-reconcile

	# The same, noticing a replica that died within 30 seconds
	kubectl catalog reconcile -A --serve --shard-group catalog-reconcile --lease-duration 30s

	# A run at least every minute, metrics on localhost only
	kubectl catalog reconcile -A --serve --serve-interval 1m --listen 127.0.0.1:9090`)

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
	Serve        ServeFlags
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
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Reconcile every namespace (the catalog namespace included).")
	fs.IntVar(&o.Workers, "workers", 8, "How many engine steps (broker calls) are taken at once; records waiting for their next poll or retry do not hold a worker.")
	fs.DurationVar(&o.MaxDuration, "max-duration", 5*time.Minute, "Bound of the run; calls under way finish, claims are released and the summary says what is left. 0: no bound.")
	fs.DurationVar(&o.RetryHorizon, "retry-horizon", DefaultRetryHorizon, "A record whose next retry or poll is due within this is waited for (also one set before the run); one due later is reported as waiting until then, and the run ends when nothing can progress sooner. 0: wait for retries as long as --max-duration allows, and leave a record not due when the run starts for a later run (the CronJob of \"reconcile install\" passes 0; --serve defaults to 0).")
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
	host, _ := os.Hostname()
	rec, err := f.Reconciler(cmdutil.EngineOptions{
		PollInterval: o.Interval, Holder: fmt.Sprintf("reconcile@%s/%d", host, os.Getpid()), TestKnobs: true,
		TargetCacheTTL: reconcile.TargetCacheTTL, Unattended: true, EventWriters: o.Workers,
	}, func(format string, args ...any) { fmt.Fprintf(o.Streams.ErrOut, format+"\n", args...) })
	if err != nil {
		return err
	}
	o.Verbose = f.Verbosity > 0
	o.showProgress = true
	if o.Prompter == nil && o.Streams.InTerminal && o.Streams.ErrTerminal {
		// The question goes to the error output, like the progress line: the output
		// may be -o json.
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.ErrOut, o.Streams.ErrOut)
	}
	o.Reconciler = rec
	return o.completeServe(f)
}

// Run reconciles and prints the summary.
func (o *Options) Run(ctx context.Context) error {
	setMemoryLimit()
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
		return err
	}
	o.noVoucherHint(sum)
	if sum.Interrupted {
		fmt.Fprintf(o.Streams.ErrOut, "interrupted: %d records left, pending as they were (a step under way was finished and recorded); run reconcile again to go on\n", sum.Left)
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
	fmt.Fprintf(o.Streams.ErrOut, "%d records were refused because no one vouches for their author: an administrator runs \"kubectl catalog init\" and their owners adopt them (\"kubectl catalog adopt -n NAMESPACE\"), or, trusting everyone who may write ConfigMaps in namespace %s, run again with --trust-namespace-writers\n",
		n, strings.Join(spaces, ", "))
}

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
	line := fmt.Sprintf("%d records: %s", len(sum.Items), strings.Join(parts, ", "))
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
