package reconcile

import (
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// heapProfileEnv names the file a run writes a heap profile to, for measuring what a
// run holds (test/bench's scale figures): the profile of the largest live heap the run
// reached, sampled every heapProfileEvery. It is read from the environment, not a flag:
// it is no part of the command's interface.
const heapProfileEnv = "KUBECTL_CATALOG_HEAP_PROFILE"

const heapProfileEvery = 20 * time.Millisecond

// startHeapProfile starts writing the heap profile heapProfileEnv names, if it names
// one, each time the live heap has grown by a tenth past its largest so far; the
// returned func stops it and writes the profile once more if the heap grew since.
func startHeapProfile() (stop func()) {
	path := os.Getenv(heapProfileEnv)
	if path == "" {
		return func() {}
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var largest uint64
	write := func() {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live <= largest+largest/10 {
			return
		}
		largest = live
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		_ = pprof.Lookup("heap").WriteTo(f, 0)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(heapProfileEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				write()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		write()
	}
}
