package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestProcTicks_ThisProcessHasUsedCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	spin := time.Now()
	for time.Since(spin) < 50*time.Millisecond {
	}
	ticks, ok := procTicks(os.Getpid())
	assert.Assert(t, ok)
	assert.Assert(t, ticks > 0)
	_, ok = procTicks(-1)
	assert.Assert(t, !ok)
}

func TestSharesNote_SplitsTheBusyTimeByProcess(t *testing.T) {
	from := cpuShares{ok: true, machine: cpuTimes{busy: 1000, total: 4000}, parts: map[string]uint64{"etcd": 100}}
	to := cpuShares{ok: true, machine: cpuTimes{busy: 2500, total: 6000}, parts: map[string]uint64{"etcd": 400, "kube-apiserver": 700}}
	note := sharesNote("run", from, to, 10*time.Second)
	assert.Assert(t, strings.Contains(note, "run: 15.0 CPU seconds"), note)
	assert.Assert(t, strings.Contains(note, "75% busy"), note)
	assert.Assert(t, strings.Contains(note, "etcd 3.0, kube-apiserver 7.0, everything else 5.0"), note)
	assert.Assert(t, strings.Contains(sharesNote("run", cpuShares{}, to, time.Second), "not measured"))
}
