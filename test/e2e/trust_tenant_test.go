package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestTrustTenant_OneTenantsRecordsNeitherStopNorHideOthers has alice, who may only write
// ConfigMaps in her namespace, write what reconcile (run with its ServiceAccount's token
// over every namespace) and doctor read: a status that makes the engine fail hard, records
// that do not decode, an empty ConfigMap squatting on bob's OSB id, compressed specs
// that decompress to far more than they weigh, an immutable record, a claim until 9999,
// and a broker whose catalog is 60 MiB. bob's work is done all the same; alice's
// records are findings of their own.
func TestTrustTenant_OneTenantsRecordsNeitherStopNorHideOthers(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	bucket := e.class.PlanByName("bucket")

	t.Run("a forged status that breaks the engine fails its record, not the run", func(t *testing.T) {
		r := trustBob(t, e, "provision", "after-crash", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		// An update in flight with no provisioned state: nothing the engine writes, and
		// the status is free for any ConfigMap writer.
		crash := engine.NewInstance(e.teamA, "crash", e.class, bucket, nil, nil, "")
		crash.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationUpdate, InstanceID: crash.Spec.ExternalID,
			PlanID: bucket.ID, StartedAt: metav1.Now()}
		tenantForge(t, e, crash, nil)

		sum, r := tenantReconcileAll(t, e)
		// The engine checks a status as the untrusted input it is: the inconsistent one is
		// a visible refusal of its record (and a failure it did not foresee would be an
		// internal error of that record alone: FuzzRun_AnyStatusFailsItsRecordOnly).
		it, ok := recItem(sum, e.teamA, "crash")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Refused, it.Detail)
		assert.Assert(t, is.Contains(it.Detail, "inconsistent status"))
		assert.Assert(t, is.Contains(r.Stderr, "instance "+e.teamA+"/crash"), "the log names the record")
		it, ok = recItem(sum, e.teamB, "after-crash")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		inst, err := e.st.Instances().Get(ctx, e.teamB, "after-crash")
		assert.NilError(t, err)
		assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	})

	t.Run("undecodable records are findings; the run and doctor go on with the rest", func(t *testing.T) {
		r := trustBob(t, e, "provision", "after-junk", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		// A broker of her own, which doctor checks, beside two that do not decode: one
		// with no format, one of a format from the future.
		tenantForge(t, e, &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: "mine"},
			Spec:       v1alpha1.BrokerSpec{URL: e.attackerURL, Scope: v1alpha1.ScopeNamespace},
		}, nil)
		for name, format := range map[string]string{"junk": "", "future": "99"} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: store.ConfigMapName(v1alpha1.KindBroker, name),
				Labels: map[string]string{store.LabelKind: v1alpha1.KindBroker, store.LabelManagedBy: store.ManagedBy}}}
			// Stamped as hers, as the trust policy lets her write records.
			cm.Annotations = map[string]string{store.AnnotationAuthor: controlplane.AliceUser,
				store.AnnotationAuthorGroups: authenticatedGroups, store.AnnotationTrustToken: e.token}
			if format != "" {
				cm.Annotations[store.AnnotationFormat] = format
				cm.Data = map[string]string{store.DataKey: "{}"}
			}
			tenantCreate(t, e, cm)
		}

		sum, r := tenantReconcileAll(t, e)
		assert.Equal(t, r.ExitCode, 1, "unreadable records are failures: %s", r.Stderr)
		it, ok := recItem(sum, e.teamB, "after-junk")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		for _, name := range []string{"junk", "future"} {
			it, ok := recKindItem(sum, v1alpha1.KindBroker, e.teamA, name)
			assert.Assert(t, ok, "%s is not in the summary: %+v", name, sum.Items)
			assert.Equal(t, it.Outcome, reconcile.Failed, it.Detail)
			assert.Assert(t, is.Contains(it.Detail, "cannot read"))
		}
		it, ok = recKindItem(sum, v1alpha1.KindBroker, e.teamA, "mine")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)

		checks := trustDoctorOf(t, e, e.teamA)
		for _, name := range []string{"junk", "future"} {
			c, ok := checks["record "+e.teamA+"/broker/"+name]
			assert.Assert(t, ok, "doctor does not name %s: %+v", name, checks)
			assert.Equal(t, c.Status, doctor.Warn, "%+v", c)
			assert.Assert(t, is.Contains(c.Detail, "cannot read it"))
		}
		c, ok := checks["broker "+e.teamA+"/mine"]
		assert.Assert(t, ok, "doctor checks the namespace's other brokers: %+v", checks)
		assert.Equal(t, c.Status, doctor.OK, "%+v", c)
		_, ok = checks["broker "+e.catalogNS+"/acme"]
		assert.Assert(t, ok, "doctor checks the cluster's brokers: %+v", checks)
	})

	t.Run("an immutable record and a claim until 9999 block nothing", func(t *testing.T) {
		r := trustBob(t, e, "provision", "beside-frozen", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		tenantForge(t, e, engine.NewInstance(e.teamA, "frozen", e.class, bucket, nil, nil, ""), func(cm *corev1.ConfigMap) {
			cm.Immutable = new(true)
		})
		tenantForge(t, e, engine.NewInstance(e.teamA, "claimed", e.class, bucket, nil, nil, ""), func(cm *corev1.ConfigMap) {
			cm.Annotations[store.AnnotationClaim] = `{"holder":"alice","expiresAt":"9999-12-31T00:00:00Z"}`
		})

		sum, _ := tenantReconcileAll(t, e)
		it, ok := recItem(sum, e.teamB, "beside-frozen")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		it, ok = recItem(sum, e.teamA, "frozen")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Failed, it.Detail)
		assert.Assert(t, is.Contains(it.Detail, "immutable"))
		assert.Assert(t, is.Contains(it.Detail, "create the record again"), "the refusal names the fix")
		it, ok = recItem(sum, e.teamA, "claimed")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Assert(t, it.Outcome != reconcile.Skipped, "a claim until 9999 is no live claim: %+v", it)
		inst, err := e.st.Instances().Get(ctx, e.teamA, "claimed")
		assert.NilError(t, err)
		l, _ := store.LeaseOf(inst)
		assert.Assert(t, l.Holder != "alice", "the claim was taken over: %+v", l)
	})

	t.Run("an empty ConfigMap labelled with bob's id blocks none of his calls", func(t *testing.T) {
		const id = "5bd1c1de-77a0-4e0b-9a30-0d9e5f3c2a11"
		tenantCreate(t, e, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA,
			Name:   store.ConfigMapName(v1alpha1.KindServiceInstance, "squat"),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance, store.IDLabel(id): "true"}}})
		// bob's record is created after the squatter: by creation time, the squatter is
		// the older.
		r := trustBob(t, e, "provision", "squatted", "--class", "object-storage", "--plan", "bucket", "--external-id", id)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		sum := trustReconcile(t, e, e.teamB)
		it, ok := recItem(sum, e.teamB, "squatted")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		_, held := e.b.Instance(id)
		assert.Assert(t, held, "bob's instance is at the broker")

		r = trustBob(t, e, "deprovision", "squatted", "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		sum = trustReconcile(t, e, e.teamB)
		it, ok = recItem(sum, e.teamB, "squatted")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		recAssertGone(t, e.st, e.teamB, "squatted")
		_, held = e.b.Instance(id)
		assert.Assert(t, !held, "bob's instance is deprovisioned")
		assert.Assert(t, len(e.b.RequestsFor(broker.OpDeprovision)) > 0)
	})

	t.Run("compressed specs that decompress to gigabytes are refused unread", func(t *testing.T) {
		args := []string{"catalog", "reconcile", "-A", "-o", "json", "--catalog-namespace", e.catalogNS, "--max-duration", "5s", "--interval", "200ms"}
		env := append(instEnviron(t), append(recEnv, "KUBECONFIG="+e.saKubeconfig)...)
		// The floor: the same run over the cluster as it is (other tests' records too),
		// before the bombs and bob's record.
		_, _, _, floorRSS := tenantMeasured(t, env, args...)
		r := trustBob(t, e, "provision", "after-bomb", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		bomb := tenantGzipBomb(t, 60<<20)
		const bombs = 4
		for i := range bombs {
			inst := engine.NewInstance(e.teamA, "bomb-"+string(rune('a'+i)), e.class, bucket, nil, nil, "")
			tenantForge(t, e, inst, func(cm *corev1.ConfigMap) {
				rec, err := json.Marshal(map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.KindServiceInstance, "specGzip": bomb})
				assert.NilError(t, err)
				cm.Data[store.DataKey] = string(rec)
				cm.Annotations[store.AnnotationFormat] = "3"
			})
		}

		out, stderr, code, maxRSS := tenantMeasured(t, env, args...)
		t.Logf("reconcile -A: exit %d, max RSS %d MiB (%d MiB before the bombs)\n%s", code, maxRSS>>20, floorRSS>>20, stderr)
		var sum reconcile.Summary
		assert.NilError(t, json.Unmarshal([]byte(out), &sum), "exit %d: %s", code, stderr)
		for i := range bombs {
			it, ok := recItem(sum, e.teamA, "bomb-"+string(rune('a'+i)))
			assert.Assert(t, ok, "%+v", sum.Items)
			assert.Equal(t, it.Outcome, reconcile.Failed, it.Detail)
			assert.Assert(t, is.Contains(it.Detail, "compressed"))
		}
		it, ok := recItem(sum, e.teamB, "after-bomb")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		// Four bombs of 60 MiB each: decoding even one of them holds 60 MiB at once.
		assert.Assert(t, maxRSS < floorRSS+60<<20, "reconcile peaked at %d MiB, %d MiB without the bombs", maxRSS>>20, floorRSS>>20)
	})

	t.Run("a namespace broker's 60 MiB catalog is refused after its limit; reconcile and marketplace stay bounded", func(t *testing.T) {
		recArgs := []string{"catalog", "reconcile", "-A", "-o", "json", "--catalog-namespace", e.catalogNS, "--max-duration", "10s", "--interval", "200ms"}
		recEnviron := append(instEnviron(t), append(recEnv, "KUBECONFIG="+e.saKubeconfig)...)
		mktArgs := []string{"catalog", "marketplace", "-A", "-o", "json", "--catalog-namespace", e.catalogNS}
		// The floors: the same runs before the broker exists.
		_, _, _, recFloor := tenantMeasured(t, recEnviron, recArgs...)
		_, _, _, mktFloor := tenantMeasured(t, instEnviron(t), mktArgs...)

		// Written as it is sent: held whole, the catalog would raise this process's own
		// peak, which the measured processes start from.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			tenantHugeCatalog(w, 60<<20)
		}))
		t.Cleanup(srv.Close)
		tenantForge(t, e, &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: "huge"},
			Spec:       v1alpha1.BrokerSpec{URL: srv.URL, Scope: v1alpha1.ScopeNamespace},
		}, nil)
		r := trustBob(t, e, "provision", "beside-huge", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)

		out, stderr, code, recRSS := tenantMeasured(t, recEnviron, recArgs...)
		t.Logf("reconcile -A: exit %d, max RSS %d MiB (%d MiB before the broker)", code, recRSS>>20, recFloor>>20)
		var sum reconcile.Summary
		assert.NilError(t, json.Unmarshal([]byte(out), &sum), "exit %d: %s", code, stderr)
		it, ok := recItem(sum, e.teamB, "beside-huge")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		it, ok = recKindItem(sum, v1alpha1.KindBroker, e.teamA, "huge")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Assert(t, is.Contains(it.Detail, "exceeds the limit of 8388608 bytes"), "%+v", it)
		b, err := e.st.Brokers().Get(ctx, e.teamA, "huge")
		assert.NilError(t, err)
		failed := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionFailed)
		assert.Assert(t, failed != nil, "%+v", b.Status)
		assert.Equal(t, failed.Reason, catalogsync.ReasonTooLarge)
		assert.Assert(t, is.Contains(failed.Message, `broker "huge"`))
		classes, err := e.st.Classes().List(ctx, e.teamA, store.Filter{Broker: "huge"})
		assert.NilError(t, err)
		assert.Equal(t, len(classes), 0, "nothing of the catalog is recorded")

		_, stderr, code, mktRSS := tenantMeasured(t, instEnviron(t), mktArgs...)
		t.Logf("marketplace -A: exit %d, max RSS %d MiB (%d MiB before the broker)", code, mktRSS>>20, mktFloor>>20)
		assert.Equal(t, code, 0, stderr)
		// The broker's answer is 60 MiB: reading it whole, or recording it, holds that
		// much at once.
		assert.Assert(t, recRSS < recFloor+40<<20, "reconcile peaked at %d MiB, %d MiB without the broker", recRSS>>20, recFloor>>20)
		assert.Assert(t, mktRSS < mktFloor+40<<20, "marketplace peaked at %d MiB, %d MiB without the broker", mktRSS>>20, mktFloor>>20)
	})
}

// tenantHugeCatalog writes a valid catalog of about size bytes to w: services of one plan
// whose descriptions are long.
func tenantHugeCatalog(w io.Writer, size int) {
	const perService = 200 << 10
	desc := strings.Repeat("x", perService)
	_, _ = io.WriteString(w, `{"services":[`)
	for i := range size / perService {
		sep := ","
		if i == 0 {
			sep = ""
		}
		_, err := fmt.Fprintf(w, `%s{"id":"huge-%04d","name":"huge-%04d","description":"%s","bindable":true,"plans":[{"id":"huge-%04d-plan","name":"plan","description":"p"}]}`,
			sep, i, i, desc, i)
		if err != nil {
			return // the client stopped reading
		}
	}
	_, _ = io.WriteString(w, `]}`)
}

// tenantForge writes rec as alice, stamped as its author with the trust token, after
// edit (if any) changed its ConfigMap; the ConfigMap goes when the test ends.
func tenantForge(t *testing.T, e *trustEnv, rec v1alpha1.Record, edit func(*corev1.ConfigMap)) {
	t.Helper()
	cm, err := store.Encode(rec)
	assert.NilError(t, err)
	cm.Annotations[store.AnnotationAuthor] = controlplane.AliceUser
	cm.Annotations[store.AnnotationAuthorGroups] = authenticatedGroups
	cm.Annotations[store.AnnotationTrustToken] = e.token
	if edit != nil {
		edit(cm)
	}
	tenantCreate(t, e, cm)
}

// tenantCreate creates cm as alice; it goes when the test ends.
func tenantCreate(t *testing.T, e *trustEnv, cm *corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	_, err := e.alice.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	assert.NilError(t, err, "alice writes %s", cm.Name)
	t.Cleanup(func() {
		// Gone now, so that the next part of the test meets only its own records.
		_ = e.alice.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		if cur, err := e.admin.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{}); err == nil && len(cur.Finalizers) > 0 {
			cur.Finalizers = nil
			_, _ = e.admin.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		}
	})
}

// tenantReconcileAll runs "kubectl catalog reconcile -A -o json" with the ServiceAccount's
// token, as reconcile in the cluster runs.
func tenantReconcileAll(t *testing.T, e *trustEnv) (reconcile.Summary, result) {
	t.Helper()
	r := runWith(t, append(instEnviron(t), append(recEnv, "KUBECONFIG="+e.saKubeconfig)...), cp.Binaries.Kubectl,
		"catalog", "reconcile", "-A", "-o", "json", "--catalog-namespace", e.catalogNS, "--max-duration", "5s", "--interval", "200ms")
	var sum reconcile.Summary
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &sum), "the run ends with its summary (exit %d): %s", r.ExitCode, r.Stderr)
	return sum, r
}

// tenantGzipBomb is a compressed instance spec of about size bytes once decompressed: a
// string field of that many repeated characters.
func tenantGzipBomb(t *testing.T, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	assert.NilError(t, err)
	_, err = zw.Write([]byte(`{"classExternalName":"`))
	assert.NilError(t, err)
	chunk := bytes.Repeat([]byte("A"), 1<<20)
	for range size >> 20 {
		_, err = zw.Write(chunk)
		assert.NilError(t, err)
	}
	_, err = zw.Write([]byte(`"}`))
	assert.NilError(t, err)
	assert.NilError(t, zw.Close())
	return buf.Bytes()
}

// tenantMeasured runs kubectl with args in env (kubectl executes the plugin in its own
// process) and returns what it printed, its exit code and its peak resident memory.
func tenantMeasured(t *testing.T, env []string, args ...string) (stdout, stderr string, code int, maxRSS int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slow(commandTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.Binaries.Kubectl, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running %s %s: %v", filepath.Base(cp.Binaries.Kubectl), strings.Join(args, " "), err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	assert.Assert(t, ok, "no resource usage of the process")
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode(), ru.Maxrss << 10
}
