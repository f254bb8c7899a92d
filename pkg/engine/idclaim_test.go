package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// svcatID is an OSB id bound to nothing, as one taken over from another platform is.
const svcatID = "svcat-0d7c0a4e"

// rewriteToID is a tenant rewriting the spec of an instance of her own to name id.
func (f *fixture) rewriteToID(namespace, name, id string) {
	f.t.Helper()
	inst, err := f.st.Instances().Get(context.Background(), namespace, name)
	assert.NilError(f.t, err)
	inst.Spec.ExternalID = id
	_, err = f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(f.t, err)
}

// adoptedInstance is an instance of namespace dev that takes over svcatID
// (provision --external-id), settled.
func (f *fixture) adoptedInstance(name string) {
	f.t.Helper()
	_, err := f.engine.Provision(context.Background(), ProvisionRequest{Namespace: ns, Name: name, Class: "db", Plan: "small", ExternalID: svcatID})
	assert.NilError(f.t, err)
	assert.Equal(f.t, f.get(name).Status.Phase, v1alpha1.PhaseReady)
	f.broker.ResetCalls()
}

func TestIDClaim_AnOlderRecordRewrittenToNameAYoungerRecordsID_IsRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Mallory's instance, created long before: older by creationTimestamp.
	_, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("hers", "team-b", "hers-own-id", nil))
	assert.NilError(t, err)
	f.advance(time.Hour)
	f.adoptedInstance("db")
	f.advance(time.Minute)
	// She saw svcatID in describe and rewrites her older record's spec to name it.
	f.rewriteToID("team-b", "hers", svcatID)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "hers"}})

	assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
	hers, err := f.st.Instances().Get(ctx, "team-b", "hers")
	assert.NilError(t, err)
	msg := condition(hers, v1alpha1.ConditionRefused).Message
	for _, want := range []string{`instance "db" in namespace "` + ns + `" adopted it first`, "change spec.externalID back", "deprovision --abandon hers"} {
		assert.Assert(t, strings.Contains(msg, want), "%q lacks %q", msg, want)
	}
	// Her deletion sends nothing under the id either.
	assert.NilError(t, f.st.Instances().Delete(ctx, "team-b", "hers"))
	f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "hers"}})
	assert.Equal(t, len(f.broker.Calls()), 0)

	// The instance that adopted the id first goes on: an update, then its deprovision.
	_, err = f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Plan: "large"}})
	assert.NilError(t, err)
	assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
	assert.Equal(t, f.step("db").State, StateDeleted)
	calls := f.broker.Calls()
	assert.Equal(t, len(calls), 2, "%+v", calls)
	for _, c := range calls {
		assert.Equal(t, callInstanceID(c), svcatID)
	}
	assert.Equal(t, calls[1].Method, fake.MethodDeprovision)
}

func TestIDClaim_TheHonestRecordBindsAndUnbinds_ThoughAnOlderOneNamesItsID(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("hers", "team-b", "hers-own-id", nil))
	assert.NilError(t, err)
	f.advance(time.Hour)
	f.adoptedInstance("db")
	f.rewriteToID("team-b", "hers", svcatID)
	assert.Assert(t, f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "hers"}}).Refused)

	_, err = f.engine.Bind(ctx, BindRequest{Namespace: ns, Instance: "db", Name: "app"})
	assert.NilError(t, err)
	b, err := f.st.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	assert.Assert(t, b.Status.Bound != nil, "%+v", b.Status.Conditions)
	_, err = f.engine.Unbind(ctx, UnbindRequest{Namespace: ns, Bindings: []string{"app"}})
	assert.NilError(t, err)
	calls := f.broker.Calls()
	assert.Equal(t, len(calls), 2, "%+v", calls)
	assert.Equal(t, calls[0].Method, fake.MethodBind)
	assert.Equal(t, calls[1].Method, fake.MethodUnbind)
	for _, c := range calls {
		assert.Equal(t, callInstanceID(c), svcatID)
	}
}

func TestIDClaim_ForgedClaims_CountForNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	hers, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("hers", "team-b", "hers-own-id", nil))
	assert.NilError(t, err)
	// Before anyone adopts the id, she makes ConfigMaps that look like claims of it in
	// her namespace: one with the labels only, one named as the claim of another uid,
	// and one named as the claim of her record in another namespace's kind.
	for _, name := range []string{
		"catalog-idclaim-forged",
		store.IDClaimName(v1alpha1.KindServiceInstance, "00000000-0000-0000-0000-000000000000", svcatID),
		store.IDClaimName(v1alpha1.KindServiceBinding, hers.UID, svcatID),
	} {
		_, err := f.cluster.Core.CoreV1().ConfigMaps("team-b").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-b", Name: name,
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance + "IDClaim", store.IDLabel(svcatID): "true"},
		}}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	f.advance(time.Hour)
	f.adoptedInstance("db")
	f.rewriteToID("team-b", "hers", svcatID)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "hers"}})

	assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
	assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
	assert.Equal(t, f.step("db").State, StateDeleted)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
}

func TestIDClaim_ARecordWithoutAClaim_GetsOneBeforeItsFirstCall(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A record of an earlier release: its spec names an id bound to nothing, no claim.
	inst := f.create("db", planSmall, "")
	name := store.IDClaimName(v1alpha1.KindServiceInstance, inst.UID, instanceOSB)
	_, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	assert.Assert(t, store.IsNotFound(err) || err != nil, "no claim yet")
	var claimed bool
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		_, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		claimed = err == nil
		return &osb.ProvisionResponse{StatusCode: 201}, nil
	})

	assert.Equal(t, f.step("db").State, StateSettled)

	assert.Assert(t, claimed, "the claim is made before the provision is sent")
	cm, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, len(cm.OwnerReferences), 1)
	assert.Equal(t, cm.OwnerReferences[0].UID, inst.UID, "it goes with the record")
	assert.Equal(t, cm.Labels[store.IDLabel(instanceOSB)], "true")
	assert.Equal(t, len(cm.Data), 0)

	// Another record created later and claiming later does not take it.
	_, err = f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("copy", "team-b", instanceOSB, nil))
	assert.NilError(t, err)
	f.advance(time.Second)
	f.broker.ResetCalls()
	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDInUse)
}

// callInstanceID is the OSB instance id a broker call was sent under.
func callInstanceID(c fake.Call) string {
	switch r := c.Request.(type) {
	case osb.ProvisionRequest:
		return r.InstanceID
	case osb.UpdateRequest:
		return r.InstanceID
	case osb.DeprovisionRequest:
		return r.InstanceID
	case osb.BindRequest:
		return r.InstanceID
	case osb.UnbindRequest:
		return r.InstanceID
	}
	return ""
}

func TestIDClaim_AClaimInTheSameSecond_IsOrderedByTheAPIServer(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("hers", "team-b", "hers-own-id", nil))
	assert.NilError(t, err)
	f.advance(time.Hour)
	f.adoptedInstance("db")
	// She watches for new records and rewrites hers at once: her claim is of the same
	// second as db's, made after it.
	f.rewriteToID("team-b", "hers", svcatID)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "hers"}})

	assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
	// Another process, which has not seen db's id before, binds db.
	_, err = New(f.engine.cfg).Bind(ctx, BindRequest{Namespace: ns, Instance: "db", Name: "app"})
	assert.NilError(t, err)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1, "db keeps its id")
}

// squat creates, in namespace team-b, a ConfigMap with the instance kind label and the
// label of OSB id id, holding data (nothing when nil): what anyone who may write
// ConfigMaps can create before the record that uses the id.
func (f *fixture) squat(name, id string, data map[string]string) {
	f.t.Helper()
	_, err := f.cluster.Core.CoreV1().ConfigMaps("team-b").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: store.ConfigMapName(v1alpha1.KindServiceInstance, name),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance, store.IDLabel(id): "true"}},
		Data: data,
	}, metav1.CreateOptions{})
	assert.NilError(f.t, err)
}

func TestTrust_AConfigMapSquattingOnAnID_BlocksNoCallOfTheRecordThatUsesIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
	}{
		{name: "empty"},
		{name: "not a record", data: map[string]string{store.DataKey: "{"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// Older than db, and in the same second a record that does use the id
			// would be older too.
			f.squat("squat", instanceOSB, tc.data)
			f.advance(time.Second)
			f.provisioned("db", planSmall, "") // settled: the provision was sent

			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			res := f.step("db")
			assert.Equal(t, res.State, StateDeleted, res.Message)
			calls := f.broker.Calls()
			assert.Equal(t, len(calls), 1)
			assert.Equal(t, calls[0].Method, "Deprovision")
		})
	}
}

func TestTrust_AnOlderRealRecordThatUsesTheID_StillBlocksIt(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	f.advance(time.Second)
	// Same id, labelled: only db's label is backed by a record naming the id.
	f.squat("squat", instanceOSB, nil)
	_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", "team-b", instanceOSB, nil))
	assert.NilError(t, err)
	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDInUse)
	copied, err := f.st.Instances().Get(context.Background(), "team-b", "copy")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(condition(copied, v1alpha1.ConditionRefused).Message, `instance "db"`), "%+v", copied.Status.Conditions)
}
