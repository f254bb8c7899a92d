package reconcile

import (
	"context"
	"sync"
)

// Pool runs do(0..n-1) on workers goroutines and returns the items in order. Once ctx
// is done, records not yet started get notRun(i) instead; started ones finish.
func Pool(ctx context.Context, workers, n int, do, notRun func(i int) Item) []Item {
	out := make([]Item, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = do(i)
			}
		}()
	}
	i := 0
feed:
	for ; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for ; i < n; i++ {
		out[i] = notRun(i)
	}
	return out
}
