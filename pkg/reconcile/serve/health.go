package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// BrokerProblem is a broker whose last catalog fetch failed and is to be retried.
type BrokerProblem struct {
	Namespace   string     `json:"namespace"`
	Name        string     `json:"name"`
	Attempts    int32      `json:"attempts"`
	LastError   string     `json:"lastError,omitempty"`
	NextRetryAt *time.Time `json:"nextRetryAt,omitempty"`
}

// brokerProblems lists the brokers whose last catalog fetch failed. Brokers are few,
// and the run lists them anyway for their relists.
func (s *Server) brokerProblems(ctx context.Context) ([]BrokerProblem, bool) {
	brokers, err := s.Reconciler.Store.Brokers().List(ctx, s.Options.Run.Namespace, store.Filter{})
	if err != nil {
		return nil, false
	}
	var out []BrokerProblem
	for _, b := range brokers {
		rt := b.Status.Retry
		if rt == nil || b.DeletionTimestamp != nil || !s.Options.Run.Shard.Owns(b.Namespace, b.Name) {
			continue
		}
		p := BrokerProblem{Namespace: b.Namespace, Name: b.Name, Attempts: rt.Attempts, LastError: cmp.Or(rt.LastError, b.Status.LastCatalogError)}
		if rt.NextRetryAt != nil {
			t := rt.NextRetryAt.UTC()
			p.NextRetryAt = &t
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b BrokerProblem) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, true
}

// checkAPI returns the result of the API server check, at most APICheckEvery old.
// Concurrent probes share one check.
func (s *Server) checkAPI(ctx context.Context) apiCheck {
	s.apiMu.Lock()
	defer s.apiMu.Unlock()
	now := s.Now()
	if !s.api.at.IsZero() && now.Sub(s.api.at) < s.Options.APICheckEvery {
		return s.api
	}
	var err error
	if s.CheckAPI != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Options.APICheckTimeout)
		err = s.CheckAPI(cctx)
		cancel()
	}
	s.api = apiCheck{at: s.Now(), err: err}
	return s.api
}

// Health is the body of /healthz.
type Health struct {
	// Status is "ok" (200) or "unhealthy" (503).
	Status string `json:"status"`
	// Problems say why it is unhealthy.
	Problems  []string       `json:"problems,omitempty"`
	APIServer HealthAPI      `json:"apiServer"`
	LastRun   *HealthLastRun `json:"lastRun,omitempty"`
	// BrokersUnreachable are the brokers whose last catalog fetch failed, as of the
	// last run. They do not make the reconciler unhealthy: restarting it would not
	// bring a broker back.
	BrokersUnreachable []BrokerProblem `json:"brokersUnreachable"`
}

// HealthAPI is the API server check.
type HealthAPI struct {
	Reachable bool      `json:"reachable"`
	CheckedAt time.Time `json:"checkedAt"`
	Error     string    `json:"error,omitempty"`
}

// HealthLastRun is the last run.
type HealthLastRun struct {
	// Time is when it ended.
	Time   time.Time                 `json:"time"`
	Took   string                    `json:"took"`
	Counts map[reconcile.Outcome]int `json:"counts"`
	TimeUp bool                      `json:"timeUp,omitempty"`
	Error  string                    `json:"error,omitempty"`
	// Next is when the next run is due at the latest.
	Next time.Time `json:"next"`
}

// Health reports whether the reconciler is healthy: the API server can be reached, the
// last run ended within 3 intervals (counted from the start while there was none),
// and it could list its work.
func (s *Server) Health(ctx context.Context) Health {
	s.setup()
	api := s.checkAPI(ctx)
	now := s.Now()
	s.mu.Lock()
	last, brokers, started, stopping := s.last, s.brokers, s.started, s.stopping
	s.mu.Unlock()

	h := Health{APIServer: HealthAPI{Reachable: api.err == nil, CheckedAt: api.at.UTC()}, BrokersUnreachable: brokers}
	if h.BrokersUnreachable == nil {
		h.BrokersUnreachable = []BrokerProblem{}
	}
	if api.err != nil {
		h.APIServer.Error = api.err.Error()
		h.Problems = append(h.Problems, "the API server cannot be reached: "+api.err.Error())
	}
	stale := 3 * s.Options.Interval
	since := started
	if last != nil {
		since = last.End
		h.LastRun = &HealthLastRun{
			Time: last.End.UTC(), Took: last.End.Sub(last.Start).Round(time.Millisecond).String(),
			Counts: last.Summary.Counts, TimeUp: last.Summary.TimeUp, Next: last.Next.UTC(),
		}
		if h.LastRun.Counts == nil {
			h.LastRun.Counts = map[reconcile.Outcome]int{}
		}
		if last.Err != nil {
			h.LastRun.Error = last.Err.Error()
			h.Problems = append(h.Problems, "the last run could not list its work: "+last.Err.Error())
		}
	}
	if age := now.Sub(since); age > stale {
		what := "no run has ended since the start"
		if last != nil {
			what = "the last run ended"
		}
		h.Problems = append(h.Problems, fmt.Sprintf("%s %s ago, more than 3 intervals (%s)", what, age.Round(time.Second), stale))
	}
	if stopping {
		h.Problems = append(h.Problems, "shutting down")
	}
	h.Status = "ok"
	if len(h.Problems) > 0 {
		h.Status = "unhealthy"
	}
	return h
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	h := s.Health(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if h.Status != "ok" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(h)
}
