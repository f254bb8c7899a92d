package reconcile

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// reconcile's client-side rate limits follow --workers unless --qps or --burst says
// otherwise; they are never below the defaults every command has.
func TestScaleRateLimits_FollowTheWorkersUnlessSet(t *testing.T) {
	for _, tc := range []struct {
		name             string
		workers          int
		qps              float32
		burst            int
		qpsSet, burstSet bool
		wantQPS          float32
		wantBurst        int
	}{
		{name: "the default 8 workers: 240 a second", workers: 8, qps: cmdutil.DefaultQPS, burst: cmdutil.DefaultBurst, wantQPS: 240, wantBurst: 480},
		{name: "64 workers", workers: 64, qps: cmdutil.DefaultQPS, burst: cmdutil.DefaultBurst, wantQPS: 1920, wantBurst: 3840},
		{name: "one worker: the defaults", workers: 1, qps: cmdutil.DefaultQPS, burst: cmdutil.DefaultBurst, wantQPS: cmdutil.DefaultQPS, wantBurst: cmdutil.DefaultBurst},
		{name: "--qps given", workers: 64, qps: 50, burst: cmdutil.DefaultBurst, qpsSet: true, wantQPS: 50, wantBurst: cmdutil.DefaultBurst},
		{name: "--qps given, the burst follows it", workers: 64, qps: 500, burst: cmdutil.DefaultBurst, qpsSet: true, wantQPS: 500, wantBurst: 1000},
		{name: "--burst given", workers: 64, qps: cmdutil.DefaultQPS, burst: 20, burstSet: true, wantQPS: 1920, wantBurst: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &cmdutil.Factory{QPS: tc.qps, Burst: tc.burst}
			scaleRateLimits(f, tc.workers, tc.qpsSet, tc.burstSet)
			assert.Equal(t, f.QPS, tc.wantQPS)
			assert.Equal(t, f.Burst, tc.wantBurst)
		})
	}
}
