package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// apiWriteFloor is what the API server alone takes for the writes a reconcile run of
// records settled records must make, by the claim rules: for each, its claim and its
// outcome (here two merge patches of an annotation of its ConfigMap, smaller than the
// record's own updates) and the Event of its outcome, sent by workers clients at once,
// straight to the API server (no plugin, no broker). It is the floor of the run on the
// API server's side, measured in the same run: the ratio of the run's wall time to it
// says how much of the run is the API server's own pace.
func (e *scaleEnv) apiWriteFloor(ctx context.Context, namespaces []string, records, workers int) (time.Duration, error) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				ns := namespaces[i%len(namespaces)]
				name := store.ConfigMapName(v1alpha1.KindServiceInstance, fmt.Sprintf("pending-%06d", i))
				err := e.floorWrites(ctx, ns, name, i)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range records {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return time.Since(start), firstErr
}

// floorWrites is one record's share of apiWriteFloor.
func (e *scaleEnv) floorWrites(ctx context.Context, ns, name string, i int) error {
	cms := e.core.CoreV1().ConfigMaps(ns)
	for k := range 2 {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench.kubectl-catalog.io/write-floor":"%d-%d"}}}`, i, k)
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("patch %s/%s: %w", ns, name, err)
		}
	}
	now := metav1.Now()
	_, err := e.core.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: name + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: name, APIVersion: "v1"},
		Reason:         "WriteFloor", Message: "the bench's API write floor", Type: corev1.EventTypeNormal,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source: corev1.EventSource{Component: "kubectl-catalog-bench"},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("event in %s: %w", ns, err)
	}
	return nil
}

// apiWriteFigure runs apiWriteFloor over the records of the high-workers run and gives
// the run's wall time against it.
func (e *scaleEnv) apiWriteFigure(ctx context.Context, namespaces []string, records, workers int, took time.Duration) (figure, error) {
	floor, err := e.apiWriteFloor(ctx, namespaces, records, workers)
	if err != nil {
		return figure{}, err
	}
	fmt.Fprintf(os.Stderr, "the API server alone, %d records' writes (2 patches + 1 Event each), %d clients: %s\n", records, workers, floor.Round(time.Millisecond))
	return figure{Name: fmt.Sprintf("reconcile -A, %d pending, %d workers: wall time against the API server's own writes", records, workers),
		Value: took, Floor: floor,
		What: fmt.Sprintf("the API server alone: %d records x (2 ConfigMap patches + 1 Event), %d clients", records, workers)}, nil
}
