// Package serve runs reconcile over and over, as "kubectl catalog reconcile --serve"
// does: the loop and its timing, the watch that triggers a run when a record starts to
// have work, the shard group's Lease kept while serving, /healthz and Prometheus
// /metrics.
package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Options configure a Server.
type Options struct {
	// Run are the options of every run. Its MaxDuration bounds each run (0: no bound);
	// "reconcile --serve" sets it to Interval unless told otherwise, so that a run
	// never outlasts the wait between two runs.
	Run reconcile.Options
	// Interval is the longest wait between the end of a run and the start of the next;
	// default 30 seconds. A run starts sooner when a record's next retry or poll is due
	// sooner, or when the watch sees a record that starts to have work.
	Interval time.Duration
	// Debounce is how long after a watch event a run starts, so that a burst of
	// changes is taken by one run; it is also the shortest gap between two runs.
	// Default 1 second.
	Debounce time.Duration
	// ShutdownGrace bounds how long a run under way goes on once the serving context
	// is done; its steps under way are then interrupted (and re-sent identically by
	// the next reconcile). Default 20 seconds.
	ShutdownGrace time.Duration
	// APICheckEvery is how long the result of the API server check is reused by
	// /healthz; default 5 seconds. APICheckTimeout bounds one check; default 3 seconds.
	APICheckEvery, APICheckTimeout time.Duration
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Interval, 30*time.Second)
	def(&o.Debounce, time.Second)
	def(&o.ShutdownGrace, 20*time.Second)
	def(&o.APICheckEvery, 5*time.Second)
	def(&o.APICheckTimeout, 3*time.Second)
	return o
}

// RunReport is what one run of a Server did.
type RunReport struct {
	Start, End time.Time
	Summary    reconcile.Summary
	// Err is the run's error: the work could not be listed, or the run was
	// interrupted at the end of the shutdown grace period.
	Err error
	// Next is when the next run is due, unless the watch or a shutdown comes first.
	Next time.Time
}

// Server runs reconcile over and over and reports on it over HTTP: /healthz for
// probes, /metrics for Prometheus. It is what "kubectl catalog reconcile --serve"
// runs.
type Server struct {
	Reconciler *reconcile.Reconciler
	// Records, when set, is watched so that a record that starts to have work is
	// driven within about Debounce, not at the next interval. Without it (or while the
	// watch fails, e.g. for lack of the watch permission) runs come at the interval.
	Records MetadataWatcher
	// CheckAPI checks cheaply that the API server can be reached (and lets the
	// reconciler list); nil counts it as reachable.
	CheckAPI func(ctx context.Context) error
	// Metrics are updated after every run; nil: a new set.
	Metrics *Metrics
	// Group, when set, makes this server a member of a shard group: it keeps its
	// Lease while it serves (deleting it when it stops), drives only its share of the
	// records, and starts a run as soon as the live members change (ending the run
	// under way early, as a shutdown does, so that the new share is taken up).
	Group *shard.Group
	// Report is called after every run, e.g. to log it.
	Report func(RunReport)
	// Logf reports what is not a run: the watch failing and recovering, shutdown.
	Logf func(format string, args ...any)
	// Now is the wall clock of the loop and the health checks; default time.Now.
	Now     func() time.Time
	Options Options

	init     sync.Once
	mu       sync.Mutex
	started  time.Time
	last     *RunReport
	brokers  []BrokerProblem
	stopping bool
	// regroup ends the run under way when the group's members change; regrouped
	// says it did.
	regroup   context.CancelFunc
	regrouped bool
	apiMu     sync.Mutex // serialises API checks; held while one is under way
	api       apiCheck
	// deleted are the records the watch saw deleted (recordWatch.Deleted); set by Serve
	// before the first run.
	deleted func() []store.WorkItem
}

type apiCheck struct {
	at  time.Time
	err error
}

func (s *Server) setup() {
	s.init.Do(func() {
		s.Options = s.Options.withDefaults()
		if s.Metrics == nil {
			s.Metrics = NewMetrics()
		}
		if s.Now == nil {
			s.Now = time.Now
		}
		if s.Logf == nil {
			s.Logf = func(string, ...any) {}
		}
		s.started = s.Now()
	})
}

// Handler serves /healthz and /metrics.
func (s *Server) Handler() http.Handler {
	s.setup()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.Handle("GET /metrics", s.Metrics.Handler())
	return mux
}

// Serve serves HTTP on ln and runs reconcile until ctx is done. Then it starts no new
// run, lets the run under way finish within ShutdownGrace, closes the HTTP server and
// returns nil. Runs that fail are reported (Report, metrics, /healthz), not returned:
// the next run tries again.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.setup()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// hard ends the run under way: ShutdownGrace after ctx is done.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	stopGrace := context.AfterFunc(ctx, func() {
		t := time.NewTimer(s.Options.ShutdownGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelHard()
		case <-hard.Done():
		}
	})
	defer stopGrace()

	var wg sync.WaitGroup
	triggered := make(chan struct{}, 1)
	if s.Records != nil {
		w := &recordWatch{
			records: s.Records, logf: s.Logf, minBackoff: time.Second, maxBackoff: s.Options.Interval, pageSize: 500,
			trigger: func() {
				select {
				case triggered <- struct{}{}:
				default:
				}
			},
		}
		s.deleted = w.Deleted
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx)
		}()
	}

	var member sync.WaitGroup
	stopMember := func() {}
	if s.Group != nil {
		// The Lease outlives ctx until the last run is over: the others take this
		// member's records once it is deleted.
		gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stopMember = cancel
		if err := s.Group.Renew(ctx); err != nil {
			s.Logf("shard group %s: %v; retrying", s.Group.Name, err)
		}
		member.Go(func() {
			s.Group.Maintain(gctx, func() {
				s.mu.Lock()
				if s.regroup != nil {
					s.regroup()
					s.regrouped = true
				}
				s.mu.Unlock()
				select {
				case triggered <- struct{}{}:
				default:
				}
			})
		})
	}

	loopErr := s.loop(ctx, hard, triggered)

	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	stopMember()
	member.Wait()
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(loopErr, err)
}

// loop runs reconcile whenever it is due, until ctx is done. Runs use hard.
func (s *Server) loop(ctx, hard context.Context, triggered <-chan struct{}) error {
	next := s.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		timer.Reset(max(next.Sub(s.Now()), 0))
		select {
		case <-ctx.Done():
			return nil
		case <-triggered:
			if soon := s.Now().Add(s.Options.Debounce); soon.Before(next) {
				next = soon
			}
			timer.Stop()
			continue
		case <-timer.C:
		}
		rep := s.runOnce(ctx, hard)
		next = rep.Next
		if s.Report != nil {
			s.Report(rep)
		}
	}
}

// runOnce runs reconcile once and records what it did.
func (s *Server) runOnce(ctx, hard context.Context) RunReport {
	rep := RunReport{Start: s.Now()}
	// On shutdown (ctx done) the run starts no new record; hard interrupts what is
	// under way once the grace period is over.
	opts := s.Options.Run
	runCtx, endRun := context.WithCancel(ctx)
	defer endRun()
	opts.Drain = runCtx.Done()
	if opts.Deleted == nil {
		// Between full passes, what the watch saw deleted is driven too.
		opts.Deleted = s.deleted
	}
	if s.Group != nil {
		opts.Group = s.Group
		if opts.StarvationBound <= 0 {
			opts.StarvationBound = s.Group.StarvationBound(s.Options.Interval)
		}
		s.mu.Lock()
		s.regroup, s.regrouped = endRun, false
		s.mu.Unlock()
	}
	rep.Summary, rep.Err = s.Reconciler.Run(hard, opts)
	if s.Group != nil {
		s.mu.Lock()
		regrouped := s.regrouped
		s.regroup, s.regrouped = nil, false
		s.mu.Unlock()
		if regrouped && ctx.Err() == nil && rep.Err == nil {
			rep.Summary.Regrouped, rep.Summary.TimeUp = true, false
		}
	}
	rep.End = s.Now()
	interrupted := hard.Err() != nil
	if rep.Err != nil && !interrupted && rep.Summary.Items != nil {
		rep.Err = nil // single records' failures are in the summary
	}
	rep.Next = s.nextRun(rep)
	s.Metrics.ObserveRun(rep.Summary, rep.Err, interrupted, rep.End.Sub(rep.Start), rep.End)

	var brokers []BrokerProblem
	brokersOK := false
	if rep.Err == nil && ctx.Err() == nil {
		bctx, cancel := context.WithTimeout(hard, s.Options.APICheckTimeout)
		brokers, brokersOK = s.brokerProblems(bctx)
		cancel()
	}
	s.mu.Lock()
	s.last = &rep
	if brokersOK {
		s.brokers = brokers
	}
	s.mu.Unlock()
	return rep
}

// nextRun is when the run after rep is due: after Interval at the latest; sooner when
// a record's next step is due sooner, or the run's time ran out; soon when the work
// could not be listed; never sooner than Debounce after rep.
func (s *Server) nextRun(rep RunReport) time.Time {
	o := s.Options
	next := rep.End.Add(o.Interval)
	switch {
	case rep.Err != nil:
		next = rep.End.Add(min(o.Interval, 5*time.Second))
	case rep.Summary.TimeUp, rep.Summary.Regrouped:
		next = rep.End
	}
	for _, it := range rep.Summary.Items {
		if it.Until == nil {
			continue
		}
		switch it.Outcome {
		case reconcile.Waiting, reconcile.InProgress, reconcile.Skipped:
			if it.Until.Before(next) {
				next = *it.Until
			}
		}
	}
	if s.Group != nil && rep.Summary.Counts[reconcile.Skipped] > 0 {
		// Records of this member's share claimed by another member, which releases
		// them when it learns that the members changed: looked at again soon, not only
		// when the claims would lapse.
		next = minTime(next, rep.End.Add(s.Group.Duration()/3))
	}
	return maxTime(next, rep.End.Add(o.Debounce))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
