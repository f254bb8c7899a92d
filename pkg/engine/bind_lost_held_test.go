package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// refuseOutcomeAfterBindingSecretWrite is refuseOutcomeAfterSecretWrite armed by a write
// of the binding's Secret (name) only, not of the Secret that keeps a request's
// parameters from Secrets ("": by a write of any Secret).
func refuseOutcomeAfterBindingSecretWrite(f *fixture, name string) {
	armed, done := false, false
	secretWritten := func(a clienttesting.Action) (bool, runtime.Object, error) {
		if done {
			return false, nil, nil
		}
		if name == "" {
			armed = true
			return false, nil, nil
		}
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if s, ok := o.GetObject().(interface{ GetName() string }); ok && s.GetName() == name {
				armed = true
			}
		}
		return false, nil, nil
	}
	f.cluster.Core.PrependReactor("create", "secrets", secretWritten)
	f.cluster.Core.PrependReactor("update", "secrets", secretWritten)
	f.cluster.Core.PrependReactor("update", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !armed {
			return false, nil, nil
		}
		armed, done = false, true
		return true, nil, apierrors.NewRequestEntityTooLargeError("the record is too large")
	})
}

// A bind whose credentials reached the binding's Secret and whose outcome could not be
// stored was answered, and the Secret that kept the parameters it sent from Secrets is
// gone meanwhile, so the request cannot be sent again as it was. The id the Secret holds
// is never orphan-mitigated for that: the binding is recorded bound under it with the
// Secret as it is, once the broker's binding could be read (GET binding) where the
// service serves it (until then it is read again after the backoff), and at once where
// it does not (the Secret records the broker's answer); for a first bind and a rotation.
func TestStep_BindWhoseSecretWasWrittenAndKeptRequestLost_NeverMitigatesTheIDTheSecretHolds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rotate      bool
		retrievable bool
		// getFails: the first GET binding calls time out.
		getFails int
	}{
		{name: "bind, bindings not retrievable"},
		{name: "rotation, bindings not retrievable", rotate: true},
		{name: "bind, bindings retrievable", retrievable: true},
		{name: "rotation, bindings retrievable", rotate: true, retrievable: true},
		{name: "bind, bindings retrievable, GET fails first", retrievable: true, getFails: 3},
		{name: "rotation, bindings retrievable, GET fails first", rotate: true, retrievable: true, getFails: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = tc.retrievable })
			f.putSecret("app-params", map[string]string{"token": firstSecretValue})
			f.createBinding("app", func(in *BindingIntent) {
				in.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "app-params"}}}
			})
			var oldID string
			if tc.rotate {
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
				oldID = f.getBinding("app").CurrentExternalID()
				_, err := f.engine.startRotation(context.Background(), ns, "app")
				assert.NilError(t, err)
			}
			newID := f.getBinding("app").CurrentExternalID()
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "fresh"}}, nil)
			gets := 0
			f.broker.OnGetBinding(func(context.Context, *osb.GetBindingRequest) (*osb.GetBindingResponse, error) {
				if gets++; gets <= tc.getFails {
					return nil, fake.Timeout()
				}
				return &osb.GetBindingResponse{Credentials: map[string]any{"password": "fresh"}}, nil
			})
			refuseOutcomeAfterBindingSecretWrite(f, "app")

			_, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
			assert.Assert(t, err != nil, "the outcome's write is refused")
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")
			op := f.getBinding("app").Status.InFlight
			assert.Assert(t, op != nil && op.BindingID == newID && op.Sent != nil && op.Sent.ParametersSecret != "", "%+v", op)
			// The Secret that kept the parameters from Secrets goes.
			assert.NilError(t, f.cluster.Core.CoreV1().Secrets(ns).Delete(context.Background(), op.Sent.ParametersSecret, metav1.DeleteOptions{}))

			binds := len(f.broker.CallsTo(fake.MethodBind))
			for range 15 {
				res, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
				assert.NilError(t, err)
				for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
					assert.Assert(t, c.Request.(osb.UnbindRequest).BindingID != newID,
						"id %s unbound while the Secret holds its credentials: %s", newID, res.Message)
				}
				if res.Done() {
					break
				}
				f.advance(max(res.RequeueAfter, time.Second))
			}
			b := f.getBinding("app")
			assert.Assert(t, b.Status.Bound != nil && b.Status.Bound.BindingID == newID, "%+v", b.Status)
			assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady)
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), binds, "the request that cannot be repeated is not sent")
			if tc.retrievable {
				assert.Equal(t, gets, tc.getFails+1, "the broker's binding is read until it answers")
			}
			for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
				assert.Assert(t, c.Request.(osb.UnbindRequest).BindingID != newID)
			}
			if tc.rotate {
				// The rotation finishes: the id it replaced is unbound.
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
				var unbound []string
				for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
					unbound = append(unbound, c.Request.(osb.UnbindRequest).BindingID)
				}
				assert.DeepEqual(t, unbound, []string{oldID})
			}
		})
	}
}

// failBindingSecretWrites makes every later write of Secret name fail with a 500.
func failBindingSecretWrites(f *fixture, name string) {
	fail := func(a clienttesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if s, ok := o.GetObject().(interface{ GetName() string }); ok && s.GetName() == name {
				return true, nil, apierrors.NewInternalError(errors.New("etcd is unavailable"))
			}
		}
		return false, nil, nil
	}
	f.cluster.Core.PrependReactor("create", "secrets", fail)
	f.cluster.Core.PrependReactor("update", "secrets", fail)
}

// A bind whose credentials reached the binding's Secret and whose outcome could not be
// stored is answered again (the identical re-send answered with credentials, or the
// asynchronous bind's poll and fetch), and this time the Secret cannot be written. The
// Secret holds that id's credentials already: the binding is recorded bound under it
// with the Secret as it is, never orphan-mitigated (which would leave the Secret holding
// credentials the broker no longer has); for a first bind and a rotation, synchronous
// and asynchronous.
func TestStep_BindWhoseSecretHoldsItsCredentials_SecretWriteFailsOnTheNextAnswer_NeverMitigatesTheID(t *testing.T) {
	for _, tc := range []struct {
		name          string
		rotate, async bool
	}{
		{name: "bind"},
		{name: "rotation", rotate: true},
		{name: "async bind", async: true},
		{name: "async rotation", rotate: true, async: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = tc.async })
			f.createBinding("app", nil)
			var oldID string
			if tc.rotate {
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
				oldID = f.getBinding("app").CurrentExternalID()
				_, err := f.engine.startRotation(context.Background(), ns, "app")
				assert.NilError(t, err)
			}
			newID := f.getBinding("app").CurrentExternalID()
			if tc.async {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Operation: "op-1"}, nil)
				f.broker.OnBindingLastOperation(func(context.Context, *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
					return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
				})
				f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": "fresh"}}, nil)
				f.stepBinding("app")
				f.advance(time.Minute)
			} else {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "fresh"}}, nil)
			}
			refuseOutcomeAfterBindingSecretWrite(f, "app")
			_, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
			assert.Assert(t, err != nil, "the outcome's write is refused")
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")

			// The broker answers again; the Secret cannot be written now.
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 200, Credentials: map[string]any{"password": "fresh"}}, nil)
			failBindingSecretWrites(f, "app")
			for range 15 {
				res, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
				assert.NilError(t, err)
				for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
					assert.Assert(t, c.Request.(osb.UnbindRequest).BindingID != newID,
						"id %s unbound while the Secret holds its credentials: %s", newID, res.Message)
				}
				if bd := f.getBinding("app").Status.Bound; bd != nil && bd.BindingID == newID {
					break
				}
				f.advance(max(res.RequeueAfter, time.Second))
			}
			b := f.getBinding("app")
			assert.Assert(t, b.Status.Bound != nil && b.Status.Bound.BindingID == newID, "%+v", b.Status)
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")
			if tc.rotate {
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
				var unbound []string
				for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
					unbound = append(unbound, c.Request.(osb.UnbindRequest).BindingID)
				}
				assert.DeepEqual(t, unbound, []string{oldID})
			}
		})
	}
}

// A status is anyone's to write who may update the binding's ConfigMap, and so is the
// annotation of the binding's own Secret: a forged bind in flight naming another
// binding's id, whose kept request is "lost" and whose Secret names that id, is vetted
// as any call: nothing is asked of the broker for that id, and the forger's binding is
// never recorded bound under it (its deletion would unbind the other binding's id).
func TestStep_ForgedLostBindNamingAnotherBindingsID_IsNeverRecordedBound(t *testing.T) {
	for _, retrievable := range []bool{false, true} {
		t.Run(map[bool]string{false: "bindings not retrievable", true: "bindings retrievable"}[retrievable], func(t *testing.T) {
			f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = retrievable })
			f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": "theirs"}}, nil)
			f.createBinding("app", nil)
			assert.Equal(t, f.driveBinding("app").State, StateSettled)
			f.createBinding("mine", func(in *BindingIntent) { in.ExternalID = "bind-mine" })
			assert.Equal(t, f.driveBinding("mine").State, StateSettled)
			f.broker.ResetCalls()

			_, err := f.st.Bindings().UpdateWithRetry(context.Background(), ns, "mine", func(b *v1alpha1.ServiceBinding) error {
				b.Status.InFlight = &v1alpha1.Operation{
					Type: v1alpha1.OperationBind, InstanceID: instanceOSB, BindingID: bindingOSB, ServiceID: classID, PlanID: planSmall,
					RequestID: "req-forged", StartedAt: metav1.NewTime(f.now),
					Sent: &v1alpha1.SentRequest{Parameters: "{}", ParametersSecret: "catalog-request-gone"},
				}
				return nil
			})
			assert.NilError(t, err)
			secrets := f.cluster.Core.CoreV1().Secrets(ns)
			s, err := secrets.Get(context.Background(), "mine", metav1.GetOptions{})
			assert.NilError(t, err)
			s.Annotations["catalog.kubectl-catalog.io/binding-id"] = bindingOSB
			_, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
			assert.NilError(t, err)

			for range 5 {
				res, err := f.engine.StepBinding(context.Background(), f.getBinding("mine"))
				assert.NilError(t, err)
				b := f.getBinding("mine")
				assert.Assert(t, b.Status.Bound == nil || b.Status.Bound.BindingID != bindingOSB, "bound under another binding's id: %s", res.Message)
				f.advance(max(res.RequeueAfter, time.Second))
			}
			for _, c := range f.broker.Calls() {
				switch r := c.Request.(type) {
				case osb.GetBindingRequest:
					assert.Assert(t, r.BindingID != bindingOSB, "GET of another binding's id")
				case osb.UnbindRequest:
					assert.Assert(t, r.BindingID != bindingOSB, "unbind of another binding's id")
				}
			}
			assert.Equal(t, f.getBinding("app").Status.Bound.BindingID, bindingOSB)
		})
	}
}
