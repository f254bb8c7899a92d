package reconcile

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// panicsOn makes the engine step of the instances named in names panic, and logs into
// the returned builder.
func panicsOn(rec *Reconciler, names ...string) *lockedLog {
	step := rec.Engine.StepInstance
	rec.stepInstance = func(ctx context.Context, inst *v1alpha1.ServiceInstance) (engine.Result, error) {
		for _, n := range names {
			if inst.Name == n {
				var op *v1alpha1.ProvisionedState
				_ = op.PlanID // a nil dereference, as a forged status may cause
			}
		}
		return step(ctx, inst)
	}
	log := &lockedLog{}
	rec.Logf = log.logf
	return log
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRun_AStepThatPanicsFailsItsRecordOnly(t *testing.T) {
	f := newFixture(t)
	for _, n := range []string{"a", "bad", "c", "d"} {
		f.instance(n)
	}
	log := panicsOn(f.rec, "bad")
	for _, workers := range []int{1, 4} {
		sum := f.run(Options{Workers: workers})
		it := f.item(sum, "bad")
		assert.Equal(t, it.Outcome, Failed, it.Detail)
		assert.Assert(t, is.Contains(it.Detail, "internal error while driving it"))
		assert.Assert(t, is.Contains(it.Detail, "nil pointer dereference"))
		assert.Assert(t, sum.Failed(), "the run says something failed")
		if workers == 1 {
			for _, n := range []string{"a", "c", "d"} {
				assert.Equal(t, f.item(sum, n).Outcome, Done, "%+v", sum.Items)
			}
		}
	}
	assert.Assert(t, is.Contains(log.String(), "instance "+ns+"/bad: internal error"))
	assert.Assert(t, is.Contains(log.String(), "recover_test.go"), "the log has the stack")
	inst, err := f.st.Instances().Get(context.Background(), ns, "bad")
	assert.NilError(t, err)
	_, claimed := inst.Annotations[store.AnnotationClaim]
	assert.Assert(t, !claimed, "no claim is left behind")
	assert.Equal(t, inst.Status.Phase, v1alpha1.Phase(""), "the record is left as it was")
}

// Two reconcile runs at once: the other run finishes a record (removes its finalizer, and
// the API server deletes it) while this run's step is writing it. The step's "not found"
// is then no failure: the record is gone, which is done. Anything else a step does not
// find (its broker, a Secret) still fails the record.
func TestRun_ARecordDeletedByAnotherDriverDuringItsStep_IsDoneNotFailed(t *testing.T) {
	f := newFixture(t)
	f.instance("gone")
	f.instance("missing")
	f.rec.stepInstance = func(ctx context.Context, inst *v1alpha1.ServiceInstance) (engine.Result, error) {
		if inst.Name == "gone" {
			// The other driver's last write: the record is removed under this step.
			cms := f.cluster.Core.CoreV1().ConfigMaps(ns)
			cm, err := cms.Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "gone"), metav1.GetOptions{})
			assert.NilError(t, err)
			cm.Finalizers = nil
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			assert.NilError(t, err)
			assert.NilError(t, cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}))
			_, err = f.st.Instances().Get(ctx, ns, "gone")
			assert.Assert(t, store.IsNotFound(err))
			return engine.Result{}, err
		}
		_, err := f.st.Brokers().Get(ctx, ns, "nosuch")
		assert.Assert(t, store.IsNotFound(err))
		return engine.Result{}, err
	}

	sum := f.run(Options{Workers: 2})

	it := f.item(sum, "gone")
	assert.Equal(t, it.Outcome, Done, it.Detail)
	assert.Equal(t, it.Detail, "gone")
	it = f.item(sum, "missing")
	assert.Equal(t, it.Outcome, Failed, "a broker not found is the record's failure: %s", it.Detail)
}
