package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestStepBinding_SyncBind_WritesOwnedSecretThenSettles(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)

	res := f.stepBinding("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodBind)
	assert.Assert(t, is.Len(calls, 1))
	req := calls[0].Request.(osb.BindRequest)
	assert.Equal(t, req.InstanceID, instanceOSB)
	assert.Equal(t, req.BindingID, bindingOSB)
	assert.Equal(t, req.ServiceID, classID)
	assert.Equal(t, req.PlanID, planSmall)
	assert.Assert(t, !req.AcceptsIncomplete, "bindings are not retrievable: a bind must be synchronous")
	assert.DeepEqual(t, req.BindResource, &osb.BindResource{AppGUID: "uid-" + ns})
	assert.Equal(t, req.Context.Namespace, ns)
	assert.Equal(t, req.Context.ClusterID, "cluster-1")
	assert.Equal(t, req.PredecessorBindingID, "")

	b := f.getBinding("db")
	assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, b.Status.Bound.BindingID, bindingOSB)
	assert.DeepEqual(t, b.Status.Secret.Keys, []string{"host", "password", "port", "provider", "type"})
	data := f.secretData("db")
	assert.Equal(t, string(data["password"]), secretValue)
	assert.Equal(t, string(data["port"]), "5432")
	assert.Equal(t, string(data["type"]), "db")
	assert.Equal(t, string(data["provider"]), brokerName)
	s, err := f.st.GetSecret(context.Background(), ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, store.OwnedBy(s, b))
	assert.Assert(t, !b.HasPendingWork())
	f.assertNoSecretInRecords()
}

// TestStepBinding_FirstBindReadsTheInstanceOnce: the step that finds out whether the
// instance is user-provided passes the instance it read on to the bind.
func TestStepBinding_FirstBindReadsTheInstanceOnce(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	f.cluster.Core.ClearActions()

	assert.Equal(t, f.stepBinding("db").State, StateSettled)

	gets := 0
	for _, a := range f.cluster.Core.Actions() {
		if g, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "get" && g.GetName() == store.ConfigMapName(v1alpha1.KindServiceInstance, "db") {
			gets++
		}
	}
	assert.Equal(t, gets, 1, "one read of the instance record")
}

func TestStepBinding_TransformsAppliedInOrder(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	url := "postgres://{.host}:{.port}"
	f.createBinding("db", func(in *BindingIntent) {
		in.Transforms = []v1alpha1.SecretTransform{
			{RenameKey: &v1alpha1.RenameKeyTransform{From: "password", To: "PGPASSWORD"}},
			{AddKey: &v1alpha1.AddKeyTransform{Key: "url", JSONPathExpression: &url}},
			{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "port"}},
		}
	})

	assert.Equal(t, f.stepBinding("db").State, StateSettled)

	data := f.secretData("db")
	assert.Equal(t, string(data["PGPASSWORD"]), secretValue)
	assert.Equal(t, string(data["url"]), "postgres://db.example:5432")
	_, hasPort := data["port"]
	assert.Assert(t, !hasPort)
}

func TestStepBinding_AsyncBind_PollsThenFetchesTheBinding(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = true })
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
	f.broker.SetBindingPollSequence("bop-1", fake.InProgress("creating role"), fake.Succeeded())
	f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": secretValue},
		Metadata: &osb.BindingMetadata{ExpiresAt: "2026-02-01T00:00:00.0Z", RenewBefore: "2026-01-20T00:00:00.0Z"}}, nil)
	f.createBinding("db", nil)

	res := f.stepBinding("db")
	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, f.broker.CallsTo(fake.MethodBind)[0].Request.(osb.BindRequest).AcceptsIncomplete)
	_, err := f.st.GetSecret(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err), "no Secret before the bind succeeded")

	res = f.driveBinding("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	b := f.getBinding("db")
	assert.Equal(t, string(f.secretData("db")["password"]), secretValue)
	assert.Equal(t, b.Status.Bound.RenewBefore.UTC().Format(time.DateOnly), "2026-01-20")
	assert.Assert(t, !RotationDue(b, f.now))
	assert.Assert(t, RotationDue(b, time.Date(2026, 1, 21, 0, 0, 0, 0, time.UTC)))
	polls := f.broker.CallsTo(fake.MethodBindingLastOperation)
	assert.Equal(t, polls[0].Request.(osb.BindingLastOperationRequest).OperationKey, "bop-1")
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodGetBinding), 1))
}

func TestStepBinding_InterruptedAfterTheBrokerAnswered_ReSendsIdenticallyAndWritesTheSecret(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	ctx, cancel := context.WithCancel(context.Background())
	f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		cancel() // the CLI dies after the broker bound, before the Secret is written
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil
	})
	_, err := f.engine.StepBinding(ctx, f.getBinding("db"))
	assert.ErrorIs(t, err, context.Canceled)
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 200, Credentials: map[string]any{"password": secretValue}}, nil)
	b := f.getBinding("db")
	assert.Assert(t, b.Status.InFlight != nil && b.Status.Secret == nil, "left with the call in flight and no Secret")

	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	assert.Equal(t, f.stepBinding("db").State, StateSettled)

	calls := f.broker.CallsTo(fake.MethodBind)
	assert.Assert(t, is.Len(calls, 2))
	first, second := calls[0].Request.(osb.BindRequest), calls[1].Request.(osb.BindRequest)
	assert.Equal(t, first.BindingID, second.BindingID)
	assert.Equal(t, first.RequestIdentity, second.RequestIdentity)
	assert.Equal(t, string(f.secretData("db")["password"]), secretValue)
}

func TestStepBinding_OrphanMitigationTable(t *testing.T) {
	tests := []struct {
		name       string
		answer     func() (*osb.BindResponse, error)
		mitigation bool
		terminal   bool
	}{
		{name: "500 unbinds, then binds again", answer: func() (*osb.BindResponse, error) {
			return nil, fake.HTTPError("PUT", 500, "", "boom")
		}, mitigation: true},
		{name: "client timeout re-sends the identical bind", answer: func() (*osb.BindResponse, error) { return nil, fake.Timeout() }},
		{name: "malformed 201 unbinds", answer: func() (*osb.BindResponse, error) { return nil, fake.Malformed(201) }, mitigation: true},
		{name: "other 2xx unbinds", answer: func() (*osb.BindResponse, error) { return &osb.BindResponse{StatusCode: 204}, nil }, mitigation: true},
		{name: "408 retries without mitigation", answer: func() (*osb.BindResponse, error) {
			return nil, fake.HTTPError("PUT", 408, "", "")
		}},
		{name: "422 ConcurrencyError retries without mitigation", answer: func() (*osb.BindResponse, error) {
			return nil, fake.HTTPError("PUT", 422, "ConcurrencyError", "busy")
		}},
		{name: "400 is terminal", answer: func() (*osb.BindResponse, error) {
			return nil, fake.HTTPError("PUT", 400, "", "bad role")
		}, terminal: true},
		{name: "409 is terminal", answer: func() (*osb.BindResponse, error) {
			return nil, fake.HTTPError("PUT", 409, "", "exists")
		}, terminal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			first := true
			f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
				if first {
					first = false
					return tc.answer()
				}
				return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil
			})
			f.createBinding("db", nil)

			res := f.driveBinding("db")

			unbinds := f.broker.CallsTo(fake.MethodUnbind)
			if tc.mitigation {
				assert.Assert(t, is.Len(unbinds, 1))
				u := unbinds[0].Request.(osb.UnbindRequest)
				assert.Equal(t, u.BindingID, bindingOSB)
				assert.Equal(t, u.PlanID, planSmall)
				assert.Assert(t, u.OriginatingIdentity == nil, "orphan mitigation is not the user's request")
			} else {
				assert.Assert(t, is.Len(unbinds, 0))
			}
			b := f.getBinding("db")
			if tc.terminal {
				assert.Equal(t, res.State, StateNeedsUser)
				assert.Equal(t, condition2(b, v1alpha1.ConditionFailed).Reason, ReasonBindRejected)
				assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 1))
				return
			}
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 2))
			assert.Equal(t, string(f.secretData("db")["password"]), secretValue)
		})
	}
}

func TestStepBinding_AsyncBindFailed_MitigatesThenBindsAgain(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = true })
	n := 0
	f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		n++
		return &osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-" + string(rune('0'+n))}, nil
	})
	f.broker.SetBindingPollSequence("bop-1", fake.Failed("quota"))
	f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": secretValue}}, nil)
	f.createBinding("db", nil)

	res := f.driveBinding("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 1))
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 2))
}

func TestStepBinding_SecretNameTakenByForeignSecret_MitigatesAndNeverOverwrites(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Data: map[string][]byte{"mine": []byte("keep")},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	f.createBinding("db", nil)

	res := f.driveBinding("db")

	assert.Equal(t, res.State, StateNeedsUser, res.Message)
	assert.DeepEqual(t, f.secretData("db"), map[string][]byte{"mine": []byte("keep")})
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 1), "the binding the broker made is unbound")
	b := f.getBinding("db")
	assert.Assert(t, b.Status.Bound == nil)
	assert.Assert(t, strings.Contains(condition2(b, v1alpha1.ConditionFailed).Message, `Secret "db"`))
}

func TestStepBinding_RefusesWhatCannotBeBound(t *testing.T) {
	t.Run("plan not bindable is terminal, nothing sent", func(t *testing.T) {
		f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.Bindable = false })
		f.createBinding("db", nil)
		res := f.stepBinding("db")
		assert.Equal(t, res.State, StateNeedsUser)
		assert.Assert(t, strings.Contains(res.Message, "not bindable"), res.Message)
		assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 0))
	})
	t.Run("instance not ready waits, nothing sent", func(t *testing.T) {
		f, _ := bindingFixture(t, nil)
		provisionReturns(f, 202, nil)
		f.create("slow", planSmall, "")
		f.step("slow")
		f.createBinding("b", func(in *BindingIntent) { in.Instance = "slow" })
		res := f.stepBinding("b")
		assert.Equal(t, res.State, StateWaiting)
		assert.Equal(t, f.getBinding("b").Status.Retry.Reason, ReasonBindWaitingForInstance)
		assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 0))
	})
}

func TestStepBinding_CredentialsHandedOutOnceToADeadCommand_RebindsUnderANewID(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = true })
	f.createBinding("db", nil)
	ctx, cancel := context.WithCancel(context.Background())
	f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		cancel() // the only answer with credentials reaches a command that dies
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil
	})
	_, err := f.engine.StepBinding(ctx, f.getBinding("db"))
	assert.ErrorIs(t, err, context.Canceled)
	// From now on the broker answers an identical bind with 200 and no credentials, and
	// GET binding gives none either; a new id gets credentials.
	f.broker.OnBind(func(_ context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
		if r.BindingID == bindingOSB {
			return &osb.BindResponse{StatusCode: 200}, nil
		}
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "fresh"}}, nil
	})
	f.broker.GetBindingReturns(&osb.GetBindingResponse{}, nil)
	f.advance(3 * time.Minute)

	res := f.driveBinding("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	unbinds := f.broker.CallsTo(fake.MethodUnbind)
	assert.Assert(t, is.Len(unbinds, 1))
	assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, bindingOSB)
	b := f.getBinding("db")
	assert.Assert(t, b.CurrentExternalID() != bindingOSB, "a binding id is never reused")
	assert.Equal(t, b.Spec.ExternalID, bindingOSB, "the engine never changes the spec")
	assert.Equal(t, b.Status.Bound.BindingID, b.CurrentExternalID())
	assert.Equal(t, string(f.secretData("db")["password"]), "fresh")
}

func TestStepBinding_ProjectionFailedOnTheSecondWorkload_IsTakenBackFromTheFirst(t *testing.T) {
	tests := []struct {
		name    string
		then    func(t *testing.T, f *fixture)
		settled State
		left    []string
	}{
		{name: "unbind removes the projection from both workloads", then: func(t *testing.T, f *fixture) {
			assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "db"))
		}, settled: StateDeleted},
		{name: "a spec naming another workload removes it from both", then: func(t *testing.T, f *fixture) {
			_, err := f.st.Bindings().UpdateWithRetry(store.WithIntent(context.Background()), ns, "db", func(b *v1alpha1.ServiceBinding) error {
				b.Spec.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "c"}}
				return nil
			})
			assert.NilError(t, err)
		}, settled: StateSettled, left: []string{"db/Deployment/c/db"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, rec := bindingFixture(t, nil)
			p := &failingProjector{recordingProjector: rec, failOn: map[string]bool{"b": true}}
			f.engine.cfg.Projector = p
			f.createBinding("db", func(in *BindingIntent) {
				in.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "a"}, {Kind: "Deployment", Name: "b"}}
			})
			for range 3 {
				f.stepBinding("db")
			}
			b := f.getBinding("db")
			assert.Equal(t, b.Status.Retry.Reason, ReasonBindProjectionFailed)
			assert.Assert(t, rec.projected["db/Deployment/a/db"], "the first workload was changed")
			assert.Assert(t, is.Len(b.Status.Projected, 0))
			assert.Assert(t, is.Len(b.Status.Projecting, 2), "both workloads are recorded before either is changed")
			assert.Assert(t, b.HasPendingWork())

			tc.then(t, f)
			res := f.driveBinding("db")

			assert.Equal(t, res.State, tc.settled, res.Message)
			left := []string{}
			for k := range rec.projected {
				left = append(left, k)
			}
			assert.DeepEqual(t, left, append([]string{}, tc.left...))
			if tc.settled == StateSettled {
				b := f.getBinding("db")
				assert.Assert(t, is.Len(b.Status.Projecting, 0))
				assert.Assert(t, !b.HasPendingWork())
			}
		})
	}
}

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
