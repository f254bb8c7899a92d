package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestTrust_ForgedRecordsAreRefused_HonestUsersAreServedByReconcile proves the records'
// trust model on the real control plane, with the trust policy installed and reconcile
// run as its ServiceAccount: records alice forges by hand in her namespace (brokers
// pointing at a server she runs, Secrets she may not read, another namespace's OSB ids, a
// disabled plan, another user's record re-stamped as hers) are refused visibly, and send
// nothing anywhere; bob, with only the documented roles, provisions, binds, unbinds and
// deprovisions through reconcile.
func TestTrust_ForgedRecordsAreRefused_HonestUsersAreServedByReconcile(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	bobIDs := map[string]string{}
	var bobBindingID string

	t.Run("bob provisions; reconcile makes the calls he may not", func(t *testing.T) {
		before := len(e.b.Requests())
		r := trustBob(t, e, "provision", "shop", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "reconcile sends the request"))
		r = trustBob(t, e, "provision", "files", "--class", "object-storage", "--plan", "bucket",
			"--params-from-secret", "bob-params/params")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		for _, n := range []string{"shop", "files"} {
			inst, err := e.st.Instances().Get(ctx, e.teamB, n)
			assert.NilError(t, err)
			assert.Equal(t, instConditionReason(inst, v1alpha1.ConditionReady), "False/"+engine.ReasonWaitingForReconcile)
			assert.Equal(t, store.AuthorOf(inst).Username, controlplane.BobUser)
			assert.Equal(t, store.AuthorOf(inst).Token, e.token)
			bobIDs[n] = inst.Spec.ExternalID
		}
		assert.Equal(t, len(e.b.Requests()), before, "bob's commands called no broker")

		sum := trustReconcile(t, e, e.teamB)
		for _, n := range []string{"shop", "files"} {
			it, ok := recItem(sum, e.teamB, n)
			assert.Assert(t, ok, "%+v", sum.Items)
			assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
			inst, err := e.st.Instances().Get(ctx, e.teamB, n)
			assert.NilError(t, err)
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
		}
		assert.DeepEqual(t, provisionParameters(t, e.b, bobIDs["files"]), map[string]any{"label": trustBobParam})
	})

	t.Run("bob binds; reconcile writes the credentials in his namespace", func(t *testing.T) {
		r := trustBob(t, e, "bind", "shop")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		b, err := e.st.Bindings().Get(ctx, e.teamB, "shop")
		assert.NilError(t, err)
		assert.Assert(t, engine.WaitingForReconcile(b), "%+v", b.Status.Conditions)
		bobBindingID = b.Spec.ExternalID

		sum := trustReconcile(t, e, e.teamB)
		it, ok := recKindItem(sum, v1alpha1.KindServiceBinding, e.teamB, "shop")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		sec, err := e.admin.CoreV1().Secrets(e.teamB).Get(ctx, "shop", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Assert(t, len(sec.Data) > 0, "credentials in the Secret")
		_, held := e.b.Binding(bobBindingID)
		assert.Assert(t, held)
	})

	t.Run("an interrupted provision of bob's is finished by reconcile", func(t *testing.T) {
		r := trustBob(t, e, "provision", "slow", "--class", "object-storage", "--plan", "bucket", "--wait", "--timeout", "2s", "--interval", "200ms")
		assert.Equal(t, r.ExitCode, 124, r.Stderr)
		sum := trustReconcile(t, e, e.teamB)
		it, ok := recItem(sum, e.teamB, "slow")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		inst, err := e.st.Instances().Get(ctx, e.teamB, "slow")
		assert.NilError(t, err)
		assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
		bobIDs["slow"] = inst.Spec.ExternalID
	})

	// What alice forges, and why the engine refuses it.
	type forged struct {
		kind, name, reason string
	}
	var refusals []forged
	var forgedIDs []string
	hidden := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "hidden", Key: "params"}}}

	t.Run("alice forges records", func(t *testing.T) {
		brokerTo := func(name string, scope v1alpha1.Scope, ref v1alpha1.SecretReference) *v1alpha1.Broker {
			return &v1alpha1.Broker{
				ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: name},
				Spec: v1alpha1.BrokerSpec{URL: e.attackerURL, Scope: scope,
					Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: ref}},
			}
		}
		// 1. A broker at her server, with another namespace's Secret as credentials.
		trustForge(t, e, brokerTo("victim-root", v1alpha1.ScopeNamespace, v1alpha1.SecretReference{Name: "root", Namespace: e.victim}), trustStamped)
		refusals = append(refusals, forged{v1alpha1.KindBroker, "victim-root", engine.ReasonRefusedUntrustedReference})
		// 2. The same with a Secret of her namespace she may not read: as herself without
		// the token, as herself with it, and with no author at all.
		trustForge(t, e, brokerTo("hidden-no-token", v1alpha1.ScopeNamespace, v1alpha1.SecretReference{Name: "hidden"}), trustUnverified)
		refusals = append(refusals, forged{v1alpha1.KindBroker, "hidden-no-token", engine.ReasonRefusedAuthorUnverified})
		trustForge(t, e, brokerTo("hidden", v1alpha1.ScopeNamespace, v1alpha1.SecretReference{Name: "hidden"}), trustStamped)
		refusals = append(refusals, forged{v1alpha1.KindBroker, "hidden", engine.ReasonRefusedNotAuthorized})
		// Without the managed-by label the API server refuses it: the policy selects
		// records by their name.
		trustForge(t, e, brokerTo("hidden-unlabelled", v1alpha1.ScopeNamespace, v1alpha1.SecretReference{Name: "hidden"}), trustUnlabelled)
		// 3. A broker claiming to be cluster-scoped outside the catalog namespace.
		trustForge(t, e, brokerTo("cluster-claim", v1alpha1.ScopeCluster, v1alpha1.SecretReference{Name: "hidden"}), trustStamped)
		refusals = append(refusals, forged{v1alpha1.KindBroker, "cluster-claim", engine.ReasonRefusedUntrustedReference})

		bucket, archive := e.class.PlanByName("bucket"), e.class.PlanByName("archive")
		instance := func(name string, plan *v1alpha1.ServicePlan, from []v1alpha1.ParametersFromSource, id string) *v1alpha1.ServiceInstance {
			inst := engine.NewInstance(e.teamA, name, e.class, plan, nil, from, id)
			if id == "" {
				forgedIDs = append(forgedIDs, inst.Spec.ExternalID)
			}
			return inst
		}
		// 4. An instance of the cluster broker with parameters from a Secret she may not
		// read (and once without the token).
		trustForge(t, e, instance("params", bucket, hidden, ""), trustStamped)
		refusals = append(refusals, forged{v1alpha1.KindServiceInstance, "params", engine.ReasonRefusedNotAuthorized})
		trustForge(t, e, instance("params-no-token", bucket, hidden, ""), trustUnverified)
		refusals = append(refusals, forged{v1alpha1.KindServiceInstance, "params-no-token", engine.ReasonRefusedAuthorUnverified})
		// 5. Bob's OSB id copied: to provision, and with a forged provisioned status,
		// deleted (so that a deprovision is due).
		trustForge(t, e, instance("copy", bucket, nil, bobIDs["shop"]), trustStamped)
		refusals = append(refusals, forged{v1alpha1.KindServiceInstance, "copy", engine.ReasonRefusedIDNotOwned})
		held := trustProvisioned(instance("copy-held", bucket, nil, bobIDs["shop"]))
		trustForge(t, e, held, trustStamped)
		assert.NilError(t, e.alice.CoreV1().ConfigMaps(e.teamA).Delete(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "copy-held"), metav1.DeleteOptions{}))
		refusals = append(refusals, forged{v1alpha1.KindServiceInstance, "copy-held", engine.ReasonRefusedIDNotOwned})
		// 6. A binding of an instance that claims bob's id and to be provisioned.
		trustForge(t, e, trustProvisioned(instance("copy-ready", bucket, nil, bobIDs["shop"])), trustStamped)
		bnd := engine.NewBinding(engine.BindingIntent{Namespace: e.teamA, Name: "copy-bind", Instance: "copy-ready", SecretName: "copy-bind"})
		forgedIDs = append(forgedIDs, bnd.Spec.ExternalID)
		trustForge(t, e, bnd, trustStamped)
		refusals = append(refusals, forged{v1alpha1.KindServiceBinding, "copy-bind", engine.ReasonRefusedIDNotOwned})
		// 7. A plan the access rules disable in her namespace.
		r := instCatalog(t, e.teamA, "access", "disable", "object-storage/archive", "--catalog-namespace", e.catalogNS)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustForge(t, e, instance("archive", archive, nil, ""), trustStamped)
		refusals = append(refusals, forged{v1alpha1.KindServiceInstance, "archive", engine.ReasonRefusedPlanNotAllowed})
	})

	t.Run("reconcile refuses every forged record and sends nothing for it", func(t *testing.T) {
		sum := trustReconcile(t, e, e.teamA)
		checks := trustDoctorOf(t, e, e.teamA)
		for _, f := range refusals {
			t.Run(f.kind+" "+f.name, func(t *testing.T) {
				it, ok := recKindItem(sum, f.kind, e.teamA, f.name)
				assert.Assert(t, ok, "not in reconcile's summary: %+v", sum.Items)
				assert.Equal(t, it.Outcome, reconcile.Refused, it.Detail)
				conds := trustConditions(t, e, f.kind, e.teamA, f.name)
				refused := meta.FindStatusCondition(conds, v1alpha1.ConditionRefused)
				assert.Assert(t, refused != nil && refused.Status == metav1.ConditionTrue, "%+v", conds)
				assert.Equal(t, refused.Reason, f.reason, refused.Message)
				ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
				assert.Assert(t, ready != nil, "%+v", conds)
				assert.Equal(t, ready.Reason, f.reason, ready.Message)
				c, ok := checks["record "+e.teamA+"/"+trustNoun(f.kind)+"/"+f.name]
				assert.Assert(t, ok, "doctor does not list it: %v", slices.Sorted(maps.Keys(checks)))
				assert.Equal(t, c.Status, doctor.Fail, "%+v", c)
				assert.Assert(t, strings.HasPrefix(c.Detail, "refused: "+f.reason), c.Detail)
				if f.kind == v1alpha1.KindBroker {
					// doctor's check of the broker itself does not call it either (a
					// warning when nobody can tell who wrote it, else a failure).
					c := checks["broker "+e.teamA+"/"+f.name]
					want := doctor.Fail
					if f.reason == engine.ReasonRefusedAuthorUnverified {
						want = doctor.Warn
					}
					assert.Equal(t, c.Status, want, "%+v", c)
					assert.Assert(t, strings.HasPrefix(c.Detail, "refused: "+f.reason), c.Detail)
				}
			})
		}
		held, err := e.st.Instances().Get(ctx, e.teamA, "copy-held")
		assert.NilError(t, err, "the refused deprovision keeps the record")
		assert.Assert(t, held.DeletionTimestamp != nil)
	})

	t.Run("an author re-stamp of another user's record is refused; the untouched one is served", func(t *testing.T) {
		adminStore := store.New(e.admin, nil, store.WithClusterIdentity(e.admin), store.WithClusterTrustToken(e.admin, e.catalogNS))
		fromAdmin := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "admin-params", Key: "params"}}}
		bucket := e.class.PlanByName("bucket")
		restamped := engine.NewInstance(e.teamA, "restamped", e.class, bucket, nil, fromAdmin, "")
		control := engine.NewInstance(e.teamA, "control", e.class, bucket, nil, fromAdmin, "")
		forgedIDs = append(forgedIDs, restamped.Spec.ExternalID)
		for _, inst := range []*v1alpha1.ServiceInstance{restamped, control} {
			_, err := adminStore.Instances().Create(store.WithIntent(ctx), inst)
			assert.NilError(t, err)
		}
		name := store.ConfigMapName(v1alpha1.KindServiceInstance, "restamped")
		cm, err := e.alice.CoreV1().ConfigMaps(e.teamA).Get(ctx, name, metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, cm.Annotations[store.AnnotationAuthor], controlplane.AdminUser)
		assert.Equal(t, cm.Annotations[store.AnnotationTrustToken], e.token)
		cm.Annotations[store.AnnotationAuthor] = controlplane.AliceUser
		cm.Annotations[store.AnnotationAuthorGroups] = authenticatedGroups
		_, err = e.alice.CoreV1().ConfigMaps(e.teamA).Update(ctx, cm, metav1.UpdateOptions{})
		assert.NilError(t, err, "the policy lets her make herself the author")

		// Naming the admin as the author, of the record she re-stamped or of her own forged
		// one, is the API server's to refuse.
		for _, n := range []string{"restamped", "params"} {
			cm, err := e.alice.CoreV1().ConfigMaps(e.teamA).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, n), metav1.GetOptions{})
			assert.NilError(t, err)
			cm.Annotations[store.AnnotationAuthor] = controlplane.AdminUser
			cm.Annotations[store.AnnotationAuthorGroups] = "system:masters," + authenticatedGroups
			_, err = e.alice.CoreV1().ConfigMaps(e.teamA).Update(ctx, cm, metav1.UpdateOptions{})
			assert.Assert(t, apierrors.IsForbidden(err), "%s: want refused by the policy, got %v", n, err)
			assert.ErrorContains(t, err, store.TrustPolicyName)
		}

		sum := trustReconcile(t, e, e.teamA)
		it, ok := recItem(sum, e.teamA, "restamped")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Refused, it.Detail)
		inst, err := e.st.Instances().Get(ctx, e.teamA, "restamped")
		assert.NilError(t, err)
		assert.Equal(t, instConditionReason(inst, v1alpha1.ConditionRefused), "True/"+engine.ReasonRefusedNotAuthorized)
		assert.Equal(t, instConditionReason(inst, v1alpha1.ConditionReady), "False/"+engine.ReasonRefusedNotAuthorized)
		checks := trustDoctorOf(t, e, e.teamA)
		c := checks["record "+e.teamA+"/instance/restamped"]
		assert.Equal(t, c.Status, doctor.Fail, "%+v", c)
		assert.Assert(t, strings.HasPrefix(c.Detail, "refused: "+engine.ReasonRefusedNotAuthorized), c.Detail)

		it, ok = recItem(sum, e.teamA, "control")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		inst, err = e.st.Instances().Get(ctx, e.teamA, "control")
		assert.NilError(t, err)
		assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
		assert.DeepEqual(t, provisionParameters(t, e.b, inst.Spec.ExternalID), map[string]any{"owner": trustAdminParam})
	})

	t.Run("nothing reached the attacker, no forged id and no hidden Secret reached the broker", func(t *testing.T) {
		assert.DeepEqual(t, e.attacker.requests(), []string(nil))
		for _, req := range e.b.Requests() {
			for _, id := range forgedIDs {
				assert.Assert(t, req.InstanceID != id && req.BindingID != id, "a request for forged id %s: %s %s", id, req.Method, req.Path)
			}
			if req.InstanceID == bobIDs["shop"] {
				switch req.Op {
				case broker.OpDeprovision:
					t.Errorf("a DELETE of bob's instance: %s %s", req.Method, req.Path)
				case broker.OpBind:
					assert.Equal(t, req.BindingID, bobBindingID, "a bind of bob's instance from another record")
				}
			}
		}
		for _, req := range append(e.brokerTap.requests(), e.attacker.requests()...) {
			for _, v := range []string{trustVictimRoot, trustTeamAHidden} {
				assert.Assert(t, !strings.Contains(req, v), "Secret value %s sent:\n%s", v, req)
			}
		}
		_, held := e.b.Instance(bobIDs["shop"])
		assert.Assert(t, held, "bob's instance stays at the broker")
	})

	t.Run("bob unbinds and deprovisions; reconcile leaves nothing of his at the broker", func(t *testing.T) {
		r := trustBob(t, e, "unbind", "shop")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		for _, n := range []string{"shop", "files", "slow"} {
			r := trustBob(t, e, "deprovision", n, "--yes")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
		sum := trustReconcile(t, e, e.teamB)
		it, ok := recKindItem(sum, v1alpha1.KindServiceBinding, e.teamB, "shop")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		for _, n := range []string{"shop", "files", "slow"} {
			it, ok := recItem(sum, e.teamB, n)
			assert.Assert(t, ok, "%+v", sum.Items)
			assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		}
		recAssertGone(t, e.st, e.teamB, "shop", "files", "slow")
		recAssertBindingGone(t, e.teamB, "shop")
		_, held := e.b.Binding(bobBindingID)
		assert.Assert(t, !held, "bob's binding is gone from the broker")
		for n, id := range bobIDs {
			_, held := e.b.Instance(id)
			assert.Assert(t, !held, "bob's instance %s is gone from the broker", n)
		}
	})

	t.Run("reconcile's ServiceAccount holds nothing broad", func(t *testing.T) {
		list := saKubectl(t, e.saKubeconfig, "auth", "can-i", "--list", "-n", "default")
		t.Logf("kubectl auth can-i --list (as the reconcile ServiceAccount):\n%s", list)
		assert.DeepEqual(t, trustRuleLines(list), trustRuleLines(trustDocumentedCanI(t)))
		assert.Assert(t, !strings.Contains(list, "impersonate"), list)
		for _, args := range [][]string{
			{"impersonate", "users"},
			{"impersonate", "serviceaccounts"},
			{"list", "secrets", "-A"},
			{"watch", "secrets", "-A"},
			{"list", "secrets", "-n", e.victim},
			{"create", "deployments.apps", "-n", e.teamA},
			{"create", "rolebindings.rbac.authorization.k8s.io", "-n", e.teamA},
			{"create", "serviceaccounts/token", "-n", e.catalogNS},
			{"delete", "validatingadmissionpolicies.admissionregistration.k8s.io/kubectl-catalog-record-author"},
		} {
			assert.Equal(t, saKubectl(t, e.saKubeconfig, append([]string{"auth", "can-i"}, args...)...), "no", "%v", args)
		}
	})
}

// How trustForge stamps a forged record.
type trustStamp int

const (
	// trustStamped: alice as author, with the current trust token (the worst case: the
	// token is readable by anyone who may read the catalog namespace).
	trustStamped trustStamp = iota
	// trustUnverified: alice as author, without the token.
	trustUnverified
	// trustUnlabelled: no author, and without the managed-by label: the API server
	// refuses it.
	trustUnlabelled
)

// trustForge writes rec as alice would by hand: store.Encode, then the annotations,
// created with her own client.
func trustForge(t *testing.T, e *trustEnv, rec v1alpha1.Record, stamp trustStamp) {
	t.Helper()
	cm, err := store.Encode(rec)
	assert.NilError(t, err)
	switch stamp {
	case trustStamped, trustUnverified:
		cm.Annotations[store.AnnotationAuthor] = controlplane.AliceUser
		cm.Annotations[store.AnnotationAuthorGroups] = authenticatedGroups
		if stamp == trustStamped {
			cm.Annotations[store.AnnotationTrustToken] = e.token
		}
	case trustUnlabelled:
		delete(cm.Labels, store.LabelManagedBy)
	}
	_, err = e.alice.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{})
	if stamp == trustUnlabelled {
		assert.Assert(t, apierrors.IsForbidden(err), "the trust policy refuses %s: %v", cm.Name, err)
		return
	}
	assert.NilError(t, err, "alice writes %s", cm.Name)
}

// trustProvisioned makes inst claim to be provisioned and settled, with the finalizer a
// deletion waits on.
func trustProvisioned(inst *v1alpha1.ServiceInstance) *v1alpha1.ServiceInstance {
	now := metav1.Now()
	inst.Finalizers = []string{store.Finalizer}
	inst.Status = v1alpha1.ServiceInstanceStatus{
		OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseReady, ObservedGeneration: 1,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Provisioned",
				Message: "provisioned", ObservedGeneration: 1, LastTransitionTime: now}}},
		Provisioned: &v1alpha1.ProvisionedState{PlanID: inst.Spec.PlanID},
	}
	return inst
}

// trustDoctorOf runs "kubectl catalog doctor -n NS -o json" as the admin and returns its
// checks by name.
func trustDoctorOf(t *testing.T, e *trustEnv, ns string) map[string]doctor.Check {
	t.Helper()
	r := instRun(t, ns, nil, "doctor", "-o", "json", "--broker-timeout", "3s", "--catalog-namespace", e.catalogNS, "--reconcile-namespace", e.catalogNS)
	var rep doctor.Report
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stderr)
	checks := map[string]doctor.Check{}
	for _, c := range rep.Checks {
		checks[c.Name] = c
	}
	return checks
}

// trustConditions reads the conditions of the record kind ns/name as the admin.
func trustConditions(t *testing.T, e *trustEnv, kind, ns, name string) []metav1.Condition {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case v1alpha1.KindBroker:
		cm, err := e.admin.CoreV1().ConfigMaps(ns).Get(ctx, store.ConfigMapName(kind, name), metav1.GetOptions{})
		assert.NilError(t, err)
		rec, err := store.Decode(cm)
		assert.NilError(t, err)
		return rec.(*v1alpha1.Broker).Status.Conditions
	case v1alpha1.KindServiceInstance:
		inst, err := e.st.Instances().Get(ctx, ns, name)
		assert.NilError(t, err)
		return inst.Status.Conditions
	case v1alpha1.KindServiceBinding:
		b, err := e.st.Bindings().Get(ctx, ns, name)
		assert.NilError(t, err)
		return b.Status.Conditions
	}
	t.Fatalf("no record kind %s", kind)
	return nil
}

func trustNoun(kind string) string {
	switch kind {
	case v1alpha1.KindServiceInstance:
		return "instance"
	case v1alpha1.KindServiceBinding:
		return "binding"
	}
	return strings.ToLower(kind)
}

// trustDocumentedCanI is the "kubectl auth can-i --list" output docs/security.md shows
// for reconcile's ServiceAccount.
func trustDocumentedCanI(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/security.md")
	assert.NilError(t, err)
	_, after, ok := strings.Cut(string(doc), "$ kubectl auth can-i --list -n default\n")
	assert.Assert(t, ok, "docs/security.md shows no kubectl auth can-i --list")
	block, _, ok := strings.Cut(after, "```")
	assert.Assert(t, ok)
	return block
}

// trustRuleLines are the rule lines of "kubectl auth can-i --list" output, each with its
// columns separated by one space, sorted.
func trustRuleLines(list string) []string {
	var lines []string
	for _, l := range strings.Split(list, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "Resources" {
			continue
		}
		lines = append(lines, strings.Join(f, " "))
	}
	sort.Strings(lines)
	return lines
}
