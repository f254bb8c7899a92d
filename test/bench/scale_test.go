package main

import (
	"testing"
	"time"
)

func TestReconcileFloor(t *testing.T) {
	for _, c := range []struct {
		busy    time.Duration
		workers int
		list    time.Duration
		want    time.Duration
	}{
		// 2,000 polls of 50 ms on 16 workers, and a LIST of 300 ms.
		{100 * time.Second, 16, 300 * time.Millisecond, 6250*time.Millisecond + 300*time.Millisecond},
		{100 * time.Second, 1, 0, 100 * time.Second},
		// No workers is read as one, not a division by zero.
		{time.Second, 0, time.Second, 2 * time.Second},
	} {
		if got := reconcileFloor(c.busy, c.workers, c.list); got != c.want {
			t.Errorf("reconcileFloor(%s, %d, %s) = %s, want %s", c.busy, c.workers, c.list, got, c.want)
		}
	}
}

func TestFigureFormat(t *testing.T) {
	count := figure{Value: 4500, Floor: 4000, Count: true, Target: 1}
	if got := count.format(count.Value); got != "4.5" {
		t.Errorf("count: %q", got)
	}
	if count.ratio() != 1.125 {
		t.Errorf("ratio %v", count.ratio())
	}
	mem := figure{Bytes: true}
	if got := mem.format(100 * 1024); got != "100.0 MiB" {
		t.Errorf("memory: %q", got)
	}
}

func TestCPUBusy(t *testing.T) {
	from, to := cpuTimes{busy: 100, total: 400}, cpuTimes{busy: 250, total: 600}
	if got := cpuBusy(from, to); got != 0.75 {
		t.Errorf("cpuBusy = %v, want 0.75", got)
	}
	if got := cpuBusy(to, to); got != 0 {
		t.Errorf("cpuBusy over no time = %v, want 0", got)
	}
	if _, ok := readCPU(); ok && cpuCount() < 1 {
		t.Errorf("/proc/stat read but no CPU counted")
	}
}

// The pending records are seeded last: their operations' age when the run starts is then
// the same at 2,000 and at 100,000 records, and so is the engine's wait between two
// polls (a tenth of an operation's age). Seeded first, they were minutes old at 100,000
// records, and the run waited some 15 s for each second poll.
func TestSeedRecords_PendingLast(t *testing.T) {
	namespaces := []string{"a", "b", "c"}
	recs := seedRecords(namespaces, 4, 5, "x-")
	if len(recs) != 9 {
		t.Fatalf("%d records, want 9", len(recs))
	}
	names := map[string]bool{}
	for i, r := range recs {
		if want := i >= 5; r.pending != want {
			t.Errorf("record %d (%s/%s) pending=%v, want %v: the pending records come last", i, r.namespace, r.name, r.pending, want)
		}
		names[r.namespace+"/"+r.name] = true
	}
	if len(names) != 9 {
		t.Errorf("%d distinct records, want 9", len(names))
	}
	// Spread round robin over the namespaces, as before.
	per := map[string]int{}
	for _, r := range recs {
		if r.pending {
			per[r.namespace]++
		}
	}
	if per["a"] != 2 || per["b"] != 1 || per["c"] != 1 {
		t.Errorf("pending records per namespace %v, want a:2 b:1 c:1", per)
	}
}
