package reconcile

import "github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"

// QPSPerWorker is the client-side rate limit reconcile allows itself per worker when
// --qps is not given: a worker polling a broker that answers in 50 ms settles a record
// every 100 ms or so, and each settled record costs its claim, its outcome and an Event
// (docs/reconcile.md), about 30 requests a second. Below it, the client's own limiter,
// not the brokers or the API server, sets reconcile's pace: at the plain default (100
// queries a second) 64 workers would wait on it most of the run.
const QPSPerWorker = 30

// scaleRateLimits raises the factory's client-side rate limits to what workers workers
// need (QPSPerWorker each, the burst twice that), never below the defaults, unless the
// user set --qps or --burst: then the user's value stands. The API server's priority
// and fairness protects it from a client with many workers, as it does from kubectl.
func scaleRateLimits(f *cmdutil.Factory, workers int, qpsSet, burstSet bool) {
	qps := float32(QPSPerWorker * workers)
	if !qpsSet && qps > f.QPS {
		f.QPS = qps
	}
	if !burstSet && 2*int(f.QPS) > f.Burst {
		f.Burst = 2 * int(f.QPS)
	}
}
