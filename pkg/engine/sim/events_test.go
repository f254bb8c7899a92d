package sim

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Events in the simulation: every process's engine records its Events (Config.Events)
// in the world, as the Kubernetes Events a cluster would keep. Checked: after every
// Event, that its reason and note hold no credential the broker gave and no secret the
// rogue broker put where none belongs (book.secrets); at quiescence, that every record
// outside the tenant's namespace whose call an Event said was requested has an Event
// after it saying what came of it (or of its re-send): a record is never left with a
// "Requested" as the last word about it.

// simEvents is a process's recorder.
type simEvents struct{ p *proc }

// recordedEvent is an Event and the process that recorded it.
type recordedEvent struct {
	ev engine.Event
	by string
}

func (r simEvents) Record(_ context.Context, ev engine.Event) {
	w := r.p.w
	w.recorded = append(w.recorded, recordedEvent{ev: ev, by: r.p.name})
	w.logf("%-14s event %s %s/%s: %s", r.p.name, ev.Reason, ev.Namespace, ev.Name, firstLine(ev.Note))
	for _, s := range w.book.secrets {
		if strings.Contains(ev.Note, s) || strings.Contains(ev.Reason, s) {
			w.fail("the %s Event about %s/%s (by %s) holds a credential the broker gave (%q)", ev.Reason, ev.Namespace, ev.Name, r.p.name, s)
			return
		}
	}
}

// checkEvents is the quiescence check of Events: the last Event about each record that
// is still there (outside the tenant's namespace) is not a "Requested" one.
func (w *world) checkEvents() {
	type ref struct {
		ns, name string
		uid      types.UID
	}
	live := map[ref]bool{}
	insts, binds := w.records()
	for _, x := range insts {
		live[ref{x.Namespace, store.ConfigMapName(v1alpha1.KindServiceInstance, x.Name), x.UID}] = true
	}
	for _, x := range binds {
		live[ref{x.Namespace, store.ConfigMapName(v1alpha1.KindServiceBinding, x.Name), x.UID}] = true
	}
	last := map[ref]recordedEvent{}
	for _, r := range w.recorded {
		if w.move.on && w.procNamed(r.by).onNew() {
			continue // the new cluster's, checked by checkNewEvents (move_test.go)
		}
		last[ref{r.ev.Namespace, r.ev.Name, r.ev.UID}] = r
	}
	for k, r := range last {
		if k.ns == "t" || !live[k] || !strings.HasSuffix(r.ev.Reason, "Requested") || r.ev.Reason == "RotationRequested" {
			continue
		}
		if r.ev.Reason == "RebindRequested" && w.rebindWaitsOnALieAt(k.ns, k.name) { // rebind_rogue_test.go
			continue
		}
		w.fail("the last Event about %s/%s is %s (by %s): no Event says what came of that call", k.ns, k.name, r.ev.Reason, r.by)
	}
}
