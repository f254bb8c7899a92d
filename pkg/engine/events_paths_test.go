package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// reasonsOf lists the reasons recorded about one record's ConfigMap, in order.
func (f *fakeEvents) reasonsOf(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.evs {
		if e.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

func TestEvents_BindingLifecycleOnEveryPath(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.Plans[0].BindingRotatable = true })
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 500, "", "boom"))
	f.stepBinding("app") // 500: orphan mitigation
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	f.stepBinding("app") // the mitigating unbind
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	_, err := f.engine.RotateScheduled(context.Background(), ns, "app")
	assert.NilError(t, err)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	assert.Equal(t, f.driveBinding("app").State, StateDeleted)

	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.app"), []string{
		"BindRequested", "OrphanMitigationStarted", "BindFailed", "RetryScheduled",
		"OrphanMitigationRequested", "OrphanMitigationFinished", "RetryScheduled",
		"BindRequested", "BindSucceeded",
		"RotationRequested", "BindRequested", "BindSucceeded", "UnbindRequested", "RotationFinished",
		"UnbindRequested", "UnbindSucceeded",
	})
	for _, e := range rec.evs {
		assert.Assert(t, !strings.Contains(e.Note, secretValue), "%s: %s", e.Reason, e.Note)
	}
}

func TestEvents_FailedBindRecordsBindFailed(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("bad", nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 400, "BadRequest", "nope"))
	f.driveBinding("bad")

	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.bad"), []string{"BindRequested", "BindFailed"})
	ev := rec.evs[len(rec.evs)-1]
	assert.Equal(t, ev.Type, EventWarning)
	assert.Assert(t, is.Contains(ev.Note, "nope"))
}

func TestEvents_OrphanMitigationThatSucceededIsNoFailure(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 500, "", "boom"))
	f.stepBinding("app")
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	f.stepBinding("app")
	reasons := rec.reasonsOf("catalog-binding.app")
	assert.Assert(t, !slices.Contains(reasons, "OrphanMitigationFailed"), "a mitigation that succeeded is no failure: %v", reasons)
	assert.Assert(t, slices.Contains(reasons, "OrphanMitigationFinished"), "%v", reasons)
}

func TestEvents_DeprovisionRecordsSucceededOnRelease(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.provisioned("db", planSmall, `{}`)
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	for range 5 {
		if f.step("db").State == StateDeleted {
			break
		}
	}
	reasons := rec.reasonsOf("catalog-instance.db")
	assert.Assert(t, len(reasons) >= 2, "%v", reasons)
	assert.DeepEqual(t, reasons[len(reasons)-2:], []string{"DeprovisionRequested", "DeprovisionSucceeded"})
}

func TestEvents_DeletionWithNothingAtTheBrokerRecordsReleased(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	assert.Equal(t, f.driveBinding("app").State, StateDeleted)
	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.app"), []string{"Released"})
}
