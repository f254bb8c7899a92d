package reconcile

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

var (
	refDB    = reconcile.Ref{Kind: "ServiceInstance", Namespace: "dev", Name: "db"}
	refCache = reconcile.Ref{Kind: "ServiceBinding", Namespace: "dev", Name: "cache"}
)

// feed plays a small run: db is provisioned after a retry, cache is left waiting.
func feed(p *Progress, at time.Time, queue bool) {
	if queue {
		p.RecordQueued(refDB)
		p.RecordQueued(refCache)
	}
	p.StepStarted(refDB, "provision")
	p.StepStarted(refCache, "bind")
	p.StepScheduled(refDB, at, "ProvisionCallFailed (attempt 1): broker said 500")
	p.RecordFinished(reconcile.Item{Namespace: "dev", Kind: "ServiceBinding", Name: "cache", Outcome: reconcile.Waiting, Until: &at, Detail: "BindCallFailed (attempt 4): no"})
	p.StepStarted(refDB, "provision")
	p.RecordFinished(reconcile.Item{Namespace: "dev", Kind: "ServiceInstance", Name: "db", Outcome: reconcile.Done, Detail: "ready"})
}

func TestProgress_LiveLineIsRedrawnThenCleared(t *testing.T) {
	var out testio.Buffer
	p := NewProgress(&out, true, false)
	p.width = func() int { return 200 }
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	p.RecordQueued(refDB)
	p.RecordQueued(refCache)
	p.StepStarted(refDB, "provision")
	p.mu.Lock()
	line := p.line()
	p.mu.Unlock()
	assert.Equal(t, line, "reconcile 0s: 0/2 finished, 1 in progress, 1 waiting; instance dev/db: provision")
	feed(p, at, false)
	p.mu.Lock()
	line = p.line()
	p.mu.Unlock()
	assert.Equal(t, line, "reconcile 0s: 2/2 finished, 0 in progress, 0 waiting")
	p.Stop()

	s := out.String()
	// Each change redraws the line in place; nothing but the line is written.
	assert.Assert(t, strings.Count(s, "\r\x1b[K") >= 8, "%q", s)
	assert.Assert(t, !strings.Contains(s, "\n"), "no log line on a terminal without -v: %q", s)
	assert.Assert(t, is.Contains(s, "binding dev/cache: bind"))
	assert.Assert(t, is.Contains(s, "1/2 finished, 1 in progress, 0 waiting; instance dev/db: provision"))
	assert.Assert(t, is.Contains(s, "0/2 finished, 1 in progress, 1 waiting; binding dev/cache: bind"))
	// Cleared last, for the table.
	assert.Assert(t, strings.HasSuffix(s, "\r\x1b[K"), "%q", s)
	// Nothing after Stop.
	p.RecordQueued(refDB)
	assert.Equal(t, out.String(), s)
}

func TestProgress_LiveLineWithVerboseLogsEachStepAboveIt(t *testing.T) {
	var out testio.Buffer
	p := NewProgress(&out, true, true)
	feed(p, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), true)
	p.Stop()
	s := out.String()
	for _, want := range []string{
		"\r\x1b[Kinstance dev/db: provision\n",
		"\r\x1b[Kinstance dev/db: waiting until 2026-01-02T03:04:05Z: ProvisionCallFailed (attempt 1): broker said 500\n",
		"\r\x1b[Kbinding dev/cache: waiting until 2026-01-02T03:04:05Z: BindCallFailed (attempt 4): no\n",
		"\r\x1b[Kinstance dev/db: done: ready\n",
	} {
		assert.Assert(t, is.Contains(s, want))
	}
}

func TestProgress_NotATerminal_PlainTimestampedLines(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var out testio.Buffer
		p := NewProgress(&out, false, verbose)
		p.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC) }
		feed(p, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), true)
		p.Interrupted()
		p.Stop()
		s := out.String()
		assert.Assert(t, !strings.Contains(s, "\x1b"), "no escape code: %q", s)
		assert.Assert(t, !strings.Contains(s, "\r"), "no carriage return: %q", s)
		want := []string{
			"2026-01-02T03:04:06Z binding dev/cache: waiting until 2026-01-02T03:04:05Z: BindCallFailed (attempt 4): no",
			"2026-01-02T03:04:06Z instance dev/db: done: ready",
			"2026-01-02T03:04:06Z interrupted: finishing the broker calls under way; Ctrl-C again exits at once",
		}
		if verbose {
			want = []string{
				"2026-01-02T03:04:06Z instance dev/db: provision",
				"2026-01-02T03:04:06Z binding dev/cache: bind",
				"2026-01-02T03:04:06Z instance dev/db: waiting until 2026-01-02T03:04:05Z: ProvisionCallFailed (attempt 1): broker said 500",
				want[0],
				"2026-01-02T03:04:06Z instance dev/db: provision",
				want[1], want[2],
			}
		}
		assert.Equal(t, s, strings.Join(want, "\n")+"\n")
	}
}
