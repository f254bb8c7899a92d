package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/serve"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
)

// ServeFlags are the flags of "reconcile --serve", which runs reconcile in a loop and
// serves /healthz and /metrics, as a Deployment does.
type ServeFlags struct {
	Enabled  bool
	Interval time.Duration
	Listen   string
	// ShutdownGrace is how long a run under way may go on after SIGTERM or SIGINT.
	ShutdownGrace time.Duration
	// ShardGroup makes this process a member of the named shard group: replicas of
	// one group split the records among the live members.
	ShardGroup string
	// LeaseDuration is how long a member's Lease lasts unrenewed.
	LeaseDuration time.Duration

	flags    *pflag.FlagSet
	group    *shard.Group
	records  serve.MetadataWatcher
	checkAPI func(context.Context) error
}

// serveOnlyFlags mean something only with --serve.
var serveOnlyFlags = []string{"serve-interval", "listen", "shutdown-grace", "shard-group", "lease-duration"}

// AddFlags adds the serve flags to cmd.
func (s *ServeFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	s.flags = fs
	fs.BoolVar(&s.Enabled, "serve", false, "Run in a loop until SIGTERM, serving /healthz and /metrics on --listen (as a Deployment); logs one line per run to stderr.")
	fs.DurationVar(&s.Interval, "serve-interval", 30*time.Second, "With --serve: longest wait between two runs (sooner when a retry or poll is due, or a record starts to have work). Also the default --max-duration of each run.")
	fs.StringVar(&s.Listen, "listen", ":8080", "With --serve: address to serve /healthz and /metrics on.")
	fs.DurationVar(&s.ShutdownGrace, "shutdown-grace", 20*time.Second, "With --serve: how long the run under way may go on after SIGTERM before its broker calls are interrupted.")
	fs.StringVar(&s.ShardGroup, "shard-group", "", "With --serve: be a member of this shard group; replicas of one group split the records among the live members (one Lease each in the catalog namespace), and take over a member's share when it stops or dies.")
	fs.DurationVar(&s.LeaseDuration, "lease-duration", shard.DefaultLeaseDuration, "With --shard-group: how long this member's Lease lasts unrenewed (renewed every third of it); a member that dies is noticed within it.")
	_ = cmd.RegisterFlagCompletionFunc("shard-group", cobra.FixedCompletions([]string{"catalog-reconcile"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("lease-duration", cobra.FixedCompletions([]string{"15s", "30s", "1m"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("serve-interval", cobra.FixedCompletions([]string{"30s", "1m", "5m"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("listen", cobra.FixedCompletions([]string{":8080", "127.0.0.1:8080"}, cobra.ShellCompDirectiveNoFileComp))
}

func (s *ServeFlags) changed(name string) bool { return s.flags != nil && s.flags.Changed(name) }

// validateServe checks the serve flags against the others, without I/O.
func (o *Options) validateServe() error {
	s := &o.Serve
	if o.DryRun == cmdutil.DryRunServer {
		return cmdutil.UsageErrorf(`--dry-run=server is not offered by reconcile: it writes only status, which a server-side dry run cannot show; use --dry-run=client to see what would be done`)
	}
	if !s.Enabled {
		for _, name := range serveOnlyFlags {
			if s.changed(name) {
				return cmdutil.UsageErrorf("--%s needs --serve", name)
			}
		}
		return nil
	}
	switch {
	case o.DryRun.Enabled():
		return cmdutil.UsageErrorf("--serve and --dry-run cannot go together: a dry run is one run; drop --serve")
	case o.Output.Format() != "":
		return cmdutil.UsageErrorf("--serve and --output cannot go together: --serve logs one line per run to stderr and serves /metrics; drop -o")
	case s.Interval <= 0:
		return cmdutil.UsageErrorf("--serve-interval must be positive, not %s", s.Interval)
	case s.ShutdownGrace <= 0:
		return cmdutil.UsageErrorf("--shutdown-grace must be positive, not %s", s.ShutdownGrace)
	case s.Listen == "":
		return cmdutil.UsageErrorf("--listen must not be empty: give an address such as :8080")
	}
	if _, _, err := net.SplitHostPort(s.Listen); err != nil {
		return cmdutil.UsageErrorf("--listen %q: want HOST:PORT or :PORT, e.g. :8080", s.Listen)
	}
	if s.changed("lease-duration") && s.ShardGroup == "" {
		return cmdutil.UsageErrorf("--lease-duration needs --shard-group")
	}
	if s.ShardGroup != "" {
		if err := shard.ValidateGroupName(s.ShardGroup); err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		if o.ShardFlag != "" {
			return cmdutil.UsageErrorf("--shard and --shard-group cannot go together: a shard group splits the records among its live members by itself; drop --shard and run as many replicas of the group as you want shards")
		}
		if s.LeaseDuration < 3*time.Second || s.LeaseDuration > time.Hour || s.LeaseDuration%time.Second != 0 {
			return cmdutil.UsageErrorf("--lease-duration must be whole seconds between 3s and 1h, not %s", s.LeaseDuration)
		}
	}
	return nil
}

// serveDefaults sets what --serve changes of a run's defaults: each run is bounded by
// --serve-interval, and has no retry horizon, unless the flags say otherwise.
func (o *Options) serveDefaults() {
	s := &o.Serve
	if !s.Enabled {
		return
	}
	if !s.changed("max-duration") {
		o.MaxDuration = s.Interval
	}
	if !s.changed("retry-horizon") {
		// The loop comes back when a retry is due: each run goes on as long as
		// --max-duration allows, as the CronJob's.
		o.RetryHorizon = 0
	}
}

// completeServe builds what serving needs besides the reconciler: the metadata watch
// of the records, and the API server check.
func (o *Options) completeServe(f *cmdutil.Factory) error {
	if !o.Serve.Enabled {
		return nil
	}
	meta, err := f.MetadataClient()
	if err != nil {
		return err
	}
	cms := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(o.Namespace)
	o.Serve.records = cms
	// The check is the request the reconciler cannot do without: a metadata list of
	// ConfigMaps where it works, one item at most. It proves the API server, its
	// storage and the reconciler's permission to list.
	o.Serve.checkAPI = func(ctx context.Context) error {
		_, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}
	if o.Serve.ShardGroup != "" {
		core, err := f.KubernetesClient()
		if err != nil {
			return err
		}
		o.Serve.group = &shard.Group{
			Name: o.Serve.ShardGroup, ID: shard.NewMemberID(), LeaseDuration: o.Serve.LeaseDuration,
			Leases: core.CoordinationV1().Leases(f.CatalogNamespace),
		}
	}
	return nil
}

// runServe runs reconcile in a loop until ctx is done (SIGTERM, SIGINT), then lets the
// run under way finish within --shutdown-grace and exits 0.
func (o *Options) runServe(ctx context.Context) error {
	s := &o.Serve
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("cannot serve /healthz and /metrics: %w", err)
	}
	errOut := o.Streams.ErrOut
	logf := func(format string, args ...any) {
		fmt.Fprintf(errOut, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
	metrics := serve.NewMetrics()
	o.Reconciler.Logf = logf
	srv := &serve.Server{
		Reconciler: o.Reconciler,
		Records:    s.records,
		Group:      s.group,
		CheckAPI:   s.checkAPI,
		Metrics:    metrics,
		Logf:       logf,
		Report:     func(rep serve.RunReport) { fmt.Fprintln(errOut, RunLine(rep)) },
		Options: serve.Options{
			Run: reconcile.Options{
				Namespace: o.Namespace, Workers: o.Workers, MaxDuration: o.MaxDuration, Shard: o.Shard,
				RotateDue: o.RotateDue, RetryHorizon: o.RetryHorizon,
				FullPassEvery: o.FullPassInterval, CatalogNamespace: o.CatalogNamespace,
			},
			Interval:      s.Interval,
			ShutdownGrace: s.ShutdownGrace,
		},
	}
	where := "namespace " + o.Namespace
	if o.Namespace == "" {
		where = "all namespaces"
	}
	logf("reconciling %s at least every %s; serving /healthz and /metrics on %s", where, s.Interval, ln.Addr())
	if g := s.group; g != nil {
		g.Logf = logf
		logf("member %s of shard group %s (Lease %s, lasting %s): taking up its share of the records", g.ID, g.Name, shard.LeaseName(g.Name, g.ID), g.LeaseDuration)
	}
	// Broker requests of the engine and the catalog syncer are timed into
	// kubectl_catalog_broker_request_duration_seconds.
	ctx = brokerclient.ContextWithObserver(ctx, metrics.ObserveBrokerRequest)
	stopping := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(stopping)
		logf("stopping: no new run; a run under way has %s to finish", s.ShutdownGrace)
	})
	err = srv.Serve(ctx, ln)
	if !stop() {
		<-stopping // its line comes first
	}
	if err != nil {
		return err
	}
	logf("stopped")
	return nil
}

// listFailedPart says that a run's list of the records failed before its end, after the
// run had stepped the records of the namespaces it had read, and what lists the others.
func listFailedPart(err error, then string) string {
	return fmt.Sprintf("the list of the records failed before its end (the records of the namespaces read before it were reconciled; %s): %v", then, err)
}

// RunLine is the log line of one run of --serve: when it ended, how long it took, and
// its counts.
func RunLine(rep serve.RunReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s reconcile run took %s: ", rep.End.UTC().Format(time.RFC3339), rep.End.Sub(rep.Start).Round(time.Millisecond))
	interrupted := errors.Is(rep.Err, context.Canceled)
	switch {
	case rep.Err != nil && !interrupted && len(rep.Summary.Items) == 0:
		fmt.Fprintf(&b, "cannot list the pending records: %v", rep.Err)
	case len(rep.Summary.Items) == 0:
		b.WriteString("nothing to do")
	default:
		b.WriteString(CountsLine(rep.Summary))
		if rep.Err != nil && !interrupted {
			// A full pass steps records while its list is read: the list failed after
			// some were.
			fmt.Fprintf(&b, "; %s", listFailedPart(rep.Err, "the next run lists the others"))
		}
	}
	if g := rep.Summary.Group; g != nil {
		fmt.Fprintf(&b, "; shard group %s: %d members, %d of %d records with work taken", g.Name, len(g.Members), g.Owned, g.Listed)
		if g.TakenOver > 0 {
			fmt.Fprintf(&b, " (%d of other members' shares, starved)", g.TakenOver)
		}
		if g.Error != "" {
			fmt.Fprintf(&b, " (the last members seen: %s)", g.Error)
		}
	}
	if rep.Summary.Regrouped {
		b.WriteString("; the group's members changed: the next run takes up the new share")
	}
	if interrupted {
		b.WriteString("; interrupted: the shutdown grace period ran out, what was under way is left pending")
	}
	if !rep.Next.IsZero() {
		fmt.Fprintf(&b, "; next run by %s", rep.Next.UTC().Format(time.RFC3339))
	}
	return b.String()
}
