package reconcile

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// finalItem is the summary's line of a task whose item is final.
func finalItem(t *task) Item {
	it := t.it
	if it.Rotated {
		it.Detail = "rotated; " + it.Detail
	}
	return it
}

// scheduledWhy says why a queued record waits: its last failure when a retry is
// scheduled, else what its last step found.
func scheduledWhy(t *task) string {
	if t.rec != nil && t.rec.loaded() {
		if rt := t.rec.object().OpStatus().Retry; rt != nil && rt.LastError != "" {
			return fmt.Sprintf("%s (attempt %d): %s", rt.Reason, rt.Attempts, rt.LastError)
		}
	}
	if t.last.Message != "" {
		return t.last.Message
	}
	return t.it.Detail
}

// progress is the item of a record left with work: in progress when an operation runs
// at the broker or the step is due, waiting when a retry is scheduled.
func progress(it Item, rec record, res engine.Result) Item {
	it.Detail = res.Message
	if !rec.loaded() {
		it.Outcome = InProgress
		return it
	}
	if next := rec.next(); !next.At.IsZero() {
		at := wholeSecond(next.At)
		it.Until = &at
	}
	st := rec.object().OpStatus()
	if op := st.InFlight; op != nil && op.Async {
		if it.Until == nil && op.NextPollAt != nil {
			at := op.NextPollAt.Time // due already: polled first by the next run
			it.Until = &at
		}
		it.Outcome = InProgress
		return it
	}
	if it.Until != nil {
		it.Outcome = Waiting
		if rt := st.Retry; rt != nil && rt.LastError != "" {
			it.Detail = fmt.Sprintf("%s (attempt %d): %s", rt.Reason, rt.Attempts, rt.LastError)
		}
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRefused); c != nil && c.Status == metav1.ConditionTrue {
			it.Outcome, it.Detail = Refused, c.Reason+": "+c.Message
		}
		return it
	}
	it.Outcome = InProgress
	return it
}

// waitingFor is the item of a record whose next step is not due: claimed by someone
// else, or waiting for a retry or poll (with the last failure, when a retry is
// scheduled).
func waitingFor(it Item, next engine.NextStep, rec record) Item {
	at := wholeSecond(next.At)
	it.Until = &at
	if next.ClaimedBy != "" {
		it.Outcome = Skipped
		it.Detail = fmt.Sprintf("%s holds it until %s", next.ClaimedBy, at.UTC().Format(time.RFC3339))
		return it
	}
	it.Outcome, it.Detail = Waiting, "next: "+next.Action
	if rec != nil && rec.loaded() {
		if rt := rec.object().OpStatus().Retry; rt != nil && rt.LastError != "" {
			it.Detail = fmt.Sprintf("%s (attempt %d): %s; next: %s", rt.Reason, rt.Attempts, rt.LastError, next.Action)
		}
	}
	return it
}

// wholeSecond rounds a NextStep's time to the second: the times it comes from are
// stored to the second (a retry's, a poll's, a claim's), and it is computed from them and
// the clock, read twice, so it may be off by the time between the two reads.
func wholeSecond(t time.Time) time.Time { return t.Round(time.Second) }

func needsUser(it Item, rec record) Item {
	it.Outcome, it.Detail = Failed, "needs the user: "+rec.remedy()
	if rec.loaded() {
		for _, c := range rec.object().OpStatus().Conditions {
			if c.Type == v1alpha1.ConditionFailed && c.Message != "" {
				it.Detail = c.Reason + ": " + c.Message
			}
		}
	}
	return it
}

// unreadable is the failure of a record whose ConfigMap holds no readable record.
func unreadable(err error) error {
	return fmt.Errorf("cannot read it: %w", err)
}

func failed(it Item, err error) Item {
	it.Outcome, it.Detail = Failed, err.Error()
	return it
}
