package engine

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestStepBinding_Unbind_RemovesProjectionAndSecretBeforeTheBrokerCall(t *testing.T) {
	f, p := bindingFixture(t, nil)
	f.createBinding("db", func(in *BindingIntent) {
		in.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}}
	})
	assert.Equal(t, f.driveBinding("db").State, StateSettled)
	assert.Assert(t, p.projected["db/Deployment/web/db"])
	assert.Assert(t, is.Len(f.getBinding("db").Status.Projected, 1))

	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "db"))
	var secretAtCall error
	f.broker.OnUnbind(func(context.Context, *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		_, secretAtCall = f.st.GetSecret(context.Background(), ns, "db")
		return &osb.UnbindResponse{StatusCode: 200}, nil
	})

	res := f.driveBinding("db")

	assert.Equal(t, res.State, StateDeleted)
	assert.Assert(t, store.IsNotFound(secretAtCall), "the Secret is deleted before the broker revokes the credentials")
	assert.Assert(t, len(p.projected) == 0)
	u := f.broker.CallsTo(fake.MethodUnbind)[0].Request.(osb.UnbindRequest)
	assert.Equal(t, u.BindingID, bindingOSB)
	assert.Assert(t, u.AcceptsIncomplete)
	_, err := f.st.Bindings().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err))
}

func TestStepBinding_UnbindFailing_KeepsTheRecordVisiblyAnd410IsSuccess(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	assert.Equal(t, f.stepBinding("db").State, StateSettled)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "db"))
	f.broker.UnbindReturns(nil, fake.HTTPError("DELETE", 503, "", "down"))

	res := f.stepBinding("db")

	assert.Equal(t, res.State, StateWaiting)
	b := f.getBinding("db")
	assert.Equal(t, b.Status.Retry.Reason, ReasonUnbindCallFailed)
	assert.Assert(t, strings.Contains(b.Status.Retry.LastError, "--abandon"))
	assert.Assert(t, len(b.Finalizers) > 0)

	f.broker.UnbindReturns(nil, fake.Gone())
	assert.Equal(t, f.driveBinding("db").State, StateDeleted)
}

func TestRotate_BindsTheNewIDWithPredecessor_SwapsTheSecret_ThenUnbindsTheOld(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.Plans[0].BindingRotatable = true })
	f.createBinding("db", nil)
	assert.Equal(t, f.stepBinding("db").State, StateSettled)
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "rotated"}}, nil)

	rotated, err := f.engine.RotateScheduled(context.Background(), ns, "db")
	assert.NilError(t, err)
	newID := rotated.CurrentExternalID()
	assert.Assert(t, newID != bindingOSB)
	assert.Equal(t, rotated.Spec.ExternalID, bindingOSB, "a rotation changes the status only")
	assert.Equal(t, rotated.RotatedFrom().ExternalID, bindingOSB)
	var secretAtUnbind map[string][]byte
	f.broker.OnUnbind(func(context.Context, *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		secretAtUnbind = f.secretData("db")
		return &osb.UnbindResponse{StatusCode: 200}, nil
	})

	res := f.driveBinding("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	binds := f.broker.CallsTo(fake.MethodBind)
	req := binds[len(binds)-1].Request.(osb.BindRequest)
	assert.Equal(t, req.BindingID, newID)
	assert.Equal(t, req.PredecessorBindingID, bindingOSB)
	unbinds := f.broker.CallsTo(fake.MethodUnbind)
	assert.Assert(t, is.Len(unbinds, 1))
	assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, bindingOSB)
	assert.Equal(t, string(secretAtUnbind["password"]), "rotated", "the old credentials are revoked only after the Secret holds the new ones")
	b := f.getBinding("db")
	assert.Equal(t, b.Status.Bound.BindingID, newID)
	assert.Assert(t, is.Len(b.Status.Retired, 0))
	assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady)
}

func TestRotate_NonRotatablePlan_FreshBindWithoutPredecessor(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	assert.Equal(t, f.stepBinding("db").State, StateSettled)
	_, err := f.engine.RotateScheduled(context.Background(), ns, "db")
	assert.NilError(t, err)

	assert.Equal(t, f.driveBinding("db").State, StateSettled)

	binds := f.broker.CallsTo(fake.MethodBind)
	assert.Equal(t, binds[len(binds)-1].Request.(osb.BindRequest).PredecessorBindingID, "")
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 1))
}
