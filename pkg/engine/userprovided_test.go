package engine

import (
	"context"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const upsPassword = "ups-pa55word-never-in-records"

// userProvided records user-provided instance "db" and writes its credentials, as
// "provision --user-provided" does, then steps it once.
func (f *fixture) userProvided(creds map[string]string) Result {
	f.t.Helper()
	ctx := context.Background()
	inst, err := f.st.Instances().Create(store.WithIntent(ctx),
		NewUserProvidedInstance(ns, "db", v1alpha1.UserProvidedService{CredentialsSecret: CredentialsSecretName("db")}))
	assert.NilError(f.t, err)
	assert.NilError(f.t, f.engine.WriteUserProvidedCredentials(ctx, inst, toBytes(creds)))
	return f.step("db")
}

func TestUserProvided_ReadyWithoutABroker_BindingsGetACopy(t *testing.T) {
	f, p := bindingFixture(t, nil)
	// The fixture's brokered "db" makes way for a user-provided one.
	assert.NilError(t, f.engine.AbandonInstance(context.Background(), f.get("db")))
	f.broker.ResetCalls()

	res := f.userProvided(map[string]string{"host": "db.internal", "password": upsPassword, "syslog_drain_url": "syslog-tls://logs.example:6514"})
	assert.Equal(t, res.State, StateSettled, res.Message)
	inst := f.get("db")
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady).Reason, ReasonUserProvided)

	f.createBinding("app", func(in *BindingIntent) {
		in.Transforms = []v1alpha1.SecretTransform{{RenameKey: &v1alpha1.RenameKeyTransform{From: "host", To: "DB_HOST"}}}
		in.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}}
	})
	res = f.driveBinding("app")
	assert.Equal(t, res.State, StateSettled, res.Message)
	b := f.getBinding("app")
	assert.Assert(t, b.Status.Bound.UserProvided)
	assert.Assert(t, b.Status.Bound.SyslogDrain)
	assert.Equal(t, meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady).Reason, ReasonCopied)
	data := f.secretData("app")
	assert.Equal(t, string(data["password"]), upsPassword)
	assert.Equal(t, string(data["DB_HOST"]), "db.internal")
	assert.Equal(t, string(data["type"]), UserProvidedType)
	assert.Assert(t, p.projected["app/Deployment/web/app"], "%v", p.projected)
	assert.Equal(t, len(f.broker.Calls()), 0, "no broker is ever called")
	f.assertNoValueInRecords(upsPassword)

	// Deleting the binding removes the copy and the projection, without a broker.
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	res = f.driveBinding("app")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Assert(t, !f.secretExists("app"))
	assert.Equal(t, len(p.projected), 0)

	// Deleting the instance deletes its credentials Secret and releases the record.
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	res = f.step("db")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Assert(t, !f.secretExists(CredentialsSecretName("db")))
	assert.Equal(t, len(f.broker.Calls()), 0)
}

func TestUserProvided_NewCredentials_ReachEveryBinding(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
	ctx := context.Background()
	f.userProvided(map[string]string{"password": "old"})
	for _, name := range []string{"a", "b"} {
		f.createBinding(name, func(in *BindingIntent) { in.ExternalID = "id-" + name })
		assert.Equal(t, f.driveBinding(name).State, StateSettled)
	}

	// What "update --credentials-..." does: a new revision, then the Secret.
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.UserProvided.Revision++ })
	assert.NilError(t, f.engine.WriteUserProvidedCredentials(ctx, f.get("db"), toBytes(map[string]string{"password": "new"})))
	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	for _, name := range []string{"a", "b"} {
		assert.Equal(t, string(f.secretData(name)["password"]), "new", name)
		assert.Assert(t, !f.getBinding(name).HasPendingWork())
	}
	assert.Assert(t, !f.get("db").HasPendingWork())
}

func TestUserProvided_ASecretTheRecordDoesNotOwn_IsNeverRead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A hand-written record naming someone else's Secret.
	f.putSecret("prod-root", map[string]string{"password": upsPassword})
	_, err := f.st.Instances().Create(store.WithIntent(ctx), NewUserProvidedInstance(ns, "db", v1alpha1.UserProvidedService{CredentialsSecret: "prod-root"}))
	assert.NilError(t, err)

	res := f.step("db")

	assert.Assert(t, res.State != StateSettled)
	inst := f.get("db")
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Reason == ReasonRefusedUntrustedReference, "%+v", inst.Status.Conditions)
	assert.Assert(t, is.Contains(c.Message, "does not belong to user-provided instance"))

	// A binding of it gets nothing.
	f.createBinding("app", nil)
	res = f.stepBinding("app")
	assert.Assert(t, res.State != StateSettled)
	assert.Assert(t, !f.secretExists("app"))
	f.assertNoValueInRecords(upsPassword)
}

func TestUserProvided_BindingAuthorWhoMayNotReadTheCredentials_GetsNoCopy(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	authz := &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
		"alice": {{Namespace: ns, Verb: "get", Resource: "secrets", Name: CredentialsSecretName("db")}},
	}}
	f.engine.cfg.Authorizer = authz
	ctx := context.Background()
	inst, err := writerStore(f, "alice", "tok").Instances().Create(store.WithIntent(ctx),
		NewUserProvidedInstance(ns, "db", v1alpha1.UserProvidedService{CredentialsSecret: CredentialsSecretName("db")}))
	assert.NilError(t, err)
	assert.NilError(t, f.engine.WriteUserProvidedCredentials(ctx, inst, toBytes(map[string]string{"password": upsPassword})))
	assert.Equal(t, f.step("db").State, StateSettled)

	// mallory may write ConfigMaps but not read the Secret: her binding copies nothing.
	_, err = writerStore(f, "mallory", "tok").Bindings().Create(store.WithIntent(ctx), NewBinding(BindingIntent{
		Namespace: ns, Name: "steal", Instance: "db", SecretName: "steal", ExternalID: "id-steal",
	}))
	assert.NilError(t, err)
	res := f.stepBinding("steal")

	assert.Assert(t, res.State != StateSettled)
	b := f.getBinding("steal")
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Reason == ReasonRefusedNotAuthorized, "%+v", b.Status.Conditions)
	assert.Assert(t, !f.secretExists("steal"))
}

func TestUserProvided_MissingCredentials_NotReady(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Instances().Create(store.WithIntent(ctx), NewUserProvidedInstance(ns, "db", v1alpha1.UserProvidedService{CredentialsSecret: CredentialsSecretName("db")}))
	assert.NilError(t, err)

	res := f.step("db")

	assert.Assert(t, res.State != StateSettled)
	assert.Assert(t, is.Contains(res.Message, `credentials Secret "db-credentials" of user-provided instance "db" is missing`))
	assert.Assert(t, CheckBindable(f.get("db"), nil) != nil)
}

// A status is free to write: a binding record forged in another namespace, whose status
// claims a copy of an older version of the credentials, must not skip the sharing check
// and get the new ones. Of a namespace the instance was shared with before, it is revoked
// (its status says a copy was made), and its deletion removes the Secret it may have; of
// one never granted, it is refused, and its deletion needs nothing of the instance.
func TestUserProvided_AForgedCopyInAnotherNamespace_OfAnUnsharedInstance_GetsNothing(t *testing.T) {
	for _, before := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared before: %v", before), func(t *testing.T) {
			testForgedUserProvidedCopy(t, before)
		})
	}
}

func testForgedUserProvidedCopy(t *testing.T, sharedBefore bool) {
	f := newFixture(t)
	f.userProvided(map[string]string{"password": upsPassword})
	b := NewBinding(BindingIntent{
		Namespace: consumerNS, Name: "forged", Instance: "db", InstanceNamespace: ns, SecretName: "forged", ExternalID: "bind-forged",
	})
	b.Status.Bound = &v1alpha1.BoundState{BindingID: "bind-forged", UserProvided: true, SourceVersion: "stale"}
	_, err := f.st.Bindings().Create(store.WithIntent(context.Background()), b)
	assert.NilError(t, err)
	if sharedBefore {
		f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{consumerNS} })
		assertRevoked(t, f, consumerNS, "forged", f.stepBindingIn(consumerNS, "forged"))
	} else {
		res := f.stepBindingIn(consumerNS, "forged")
		assert.Assert(t, res.Refused, "%+v", res)
		assertBindingRefused(t, f, consumerNS, "forged", ReasonRefusedNotShared)
		_, err := f.cluster.Core.CoreV1().Secrets(consumerNS).Get(context.Background(), "forged", metav1.GetOptions{})
		assert.Assert(t, err != nil, "no Secret was written")
		assert.NilError(t, f.st.Bindings().Delete(context.Background(), consumerNS, "forged"))
	}
	res := f.stepBindingIn(consumerNS, "forged")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Equal(t, len(f.broker.Calls()), 0, "a user-provided instance's binding calls no broker")
}
