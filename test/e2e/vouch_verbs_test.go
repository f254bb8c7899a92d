package e2e

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// The everyday verbs write the record they change as their runner's intent, and so make
// her its author. alice, who may write ConfigMaps in bob's namespace but not read its
// Secrets, adds Secret "vault" to bob's records (parameters from it, its keys copied into
// the binding's Secret): the trust policy makes her their author, and reconcile refuses
// to act for her. bob then runs a verb on his own record: without a terminal and without
// --yes it shows what he would vouch for, refuses naming the flag and changes nothing;
// its dry run shows it and changes nothing; with --yes he vouches for it knowingly.
// vault's contents reach the broker only then.
func TestVouch_EverydayVerbsOnARecordAnotherPersonRewrote_ShowItAndAskFirst(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	vouchAliceWritesConfigMaps(t, e, e.teamB)
	type verb struct {
		name, rec string
		kind      string // of the record alice rewrites
		edit      func(rec string, r v1alpha1.Record)
		args      []string
		means     string
		// noDryRun: the verb has no --dry-run.
		noDryRun bool
	}
	fromVault := func(rec string) []v1alpha1.ParametersFromSource {
		return []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "vault", Key: rec}}}
	}
	addParams := func(rec string, r v1alpha1.Record) {
		r.(*v1alpha1.ServiceInstance).Spec.ParametersFrom = fromVault(rec)
	}
	paramsMean := func(rec string) string {
		return `parameters from Secret "vault" (key "` + rec + `") go to `
	}
	verbs := []verb{
		{name: "update parameters", rec: "va", kind: v1alpha1.KindServiceInstance, edit: addParams,
			args: []string{"update", "va", "-p", "size=2"}, means: paramsMean("va")},
		{name: "touch", rec: "vb", kind: v1alpha1.KindServiceInstance, edit: addParams,
			args: []string{"touch", "instance", "vb"}, means: paramsMean("vb")},
		{name: "share", rec: "vc", kind: v1alpha1.KindServiceInstance, edit: addParams,
			args: []string{"share", "vc", "--to-namespace", e.victim}, means: paramsMean("vc")},
		{name: "unshare", rec: "vd", kind: v1alpha1.KindServiceInstance,
			edit: func(rec string, r v1alpha1.Record) {
				addParams(rec, r)
				r.(*v1alpha1.ServiceInstance).Spec.SharedWith = []string{e.teamA, e.victim}
			},
			args: []string{"unshare", "vd", "--from-namespace", e.victim}, means: paramsMean("vd")},
		{name: "share after alice shared it with her namespace", rec: "ve", kind: v1alpha1.KindServiceInstance,
			edit: func(_ string, r v1alpha1.Record) { r.(*v1alpha1.ServiceInstance).Spec.SharedWith = []string{e.teamA} },
			args: []string{"share", "ve", "--to-namespace", e.victim}, means: `namespace "` + e.teamA + `" may bind it`},
		{name: "update --revert after alice shared it with her namespace", rec: "vg", kind: v1alpha1.KindServiceInstance,
			edit: func(_ string, r v1alpha1.Record) {
				inst := r.(*v1alpha1.ServiceInstance)
				inst.Spec.SharedWith = []string{e.teamA}
				// Something to revert: parameters the broker does not hold.
				inst.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"size":9}`)}
			},
			args: []string{"update", "vg", "--revert"}, means: `namespace "` + e.teamA + `" may bind it`, noDryRun: true},
		{name: "bind --rotate", rec: "vf", kind: v1alpha1.KindServiceBinding,
			edit: func(rec string, r v1alpha1.Record) { r.(*v1alpha1.ServiceBinding).Spec.ParametersFrom = fromVault(rec) },
			args: []string{"bind", "--rotate", "vf"}, means: paramsMean("vf"), noDryRun: true},
	}
	vault := map[string]string{}
	for _, v := range verbs {
		vault[v.rec] = `{"leak":"` + vouchVault + "-" + v.rec + `"}`
	}
	_, err := e.admin.CoreV1().Secrets(e.teamB).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vault"}, StringData: vault}, metav1.CreateOptions{})
	assert.NilError(t, err)

	leaked := func(rec string) bool {
		for _, r := range e.brokerTap.requests() {
			if strings.Contains(r, vouchVault+"-"+rec) {
				return true
			}
		}
		return false
	}
	cmOf := func(kind, name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, store.ConfigMapName(kind, name), metav1.GetOptions{})
		assert.NilError(t, err)
		return cm
	}
	// rewrite changes bob's record as alice, by hand.
	rewrite := func(kind, name string, edit func(v1alpha1.Record)) {
		t.Helper()
		cm, err := e.alice.CoreV1().ConfigMaps(e.teamB).Get(ctx, store.ConfigMapName(kind, name), metav1.GetOptions{})
		assert.NilError(t, err)
		rec, err := store.Decode(cm)
		assert.NilError(t, err)
		edit(rec)
		enc, err := store.Encode(rec)
		assert.NilError(t, err)
		cm.Data[store.DataKey] = enc.Data[store.DataKey]
		cm.Annotations[store.AnnotationAuthor] = controlplane.AliceUser
		cm.Annotations[store.AnnotationAuthorGroups] = authenticatedGroups
		cm.Annotations[store.AnnotationTrustToken] = e.token
		_, err = e.alice.CoreV1().ConfigMaps(e.teamB).Update(ctx, cm, metav1.UpdateOptions{})
		assert.NilError(t, err, "alice rewrites %s %s", kind, name)
	}

	// bob's records, provisioned and bound by reconcile.
	for _, v := range verbs {
		r := trustBob(t, e, "provision", v.rec, "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	trustReconcile(t, e, e.teamB)
	for _, v := range verbs {
		if v.kind == v1alpha1.KindServiceBinding {
			r := trustBob(t, e, "bind", v.rec, "--name", v.rec)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
	}
	trustReconcile(t, e, e.teamB)
	for _, v := range verbs {
		if v.kind == v1alpha1.KindServiceBinding {
			b, err := e.st.Bindings().Get(ctx, e.teamB, v.rec)
			assert.NilError(t, err)
			assert.Assert(t, b.Status.Bound != nil, "binding %s is bound: %+v", v.rec, b.Status)
		} else {
			inst, err := e.st.Instances().Get(ctx, e.teamB, v.rec)
			assert.NilError(t, err)
			assert.Assert(t, inst.Status.Provisioned != nil, "instance %s is provisioned: %+v", v.rec, inst.Status)
		}
		rewrite(v.kind, v.rec, func(r v1alpha1.Record) { v.edit(v.rec, r) })
	}

	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) {
			before := cmOf(v.kind, v.rec)
			// No terminal, no --yes: shown, refused naming the flag, nothing changed.
			r := trustBob(t, e, v.args...)
			assert.Check(t, r.ExitCode != 0, "the verb vouched silently for what alice wrote: %s", r.Stderr)
			assert.Check(t, is.Contains(r.Stderr, v.means))
			assert.Check(t, is.Contains(r.Stderr, `written by "`+controlplane.AliceUser+`"`))
			assert.Check(t, is.Contains(r.Stderr, "--yes"))
			after := cmOf(v.kind, v.rec)
			assert.Check(t, is.Equal(after.Annotations[store.AnnotationAuthor], controlplane.AliceUser), "the record is still alice's")
			assert.Check(t, is.Equal(after.ResourceVersion, before.ResourceVersion), "nothing changed")
			if v.noDryRun {
				return
			}
			// The dry run shows it and changes nothing.
			r = trustBob(t, e, append(v.args, "--dry-run=client")...)
			assert.Check(t, is.Equal(r.ExitCode, 0), r.Stderr)
			assert.Check(t, is.Contains(r.Stderr, v.means))
			assert.Check(t, is.Equal(cmOf(v.kind, v.rec).ResourceVersion, before.ResourceVersion), "the dry run changed nothing")
		})
	}
	// reconcile acts for none of them: alice is still their author.
	trustReconcile(t, e, e.teamB)
	for _, v := range verbs {
		assert.Check(t, !leaked(v.rec), "%s: vault reached the broker on bob's authority", v.name)
	}

	// With --yes bob vouches for it knowingly: he is the author, and vault goes to the
	// broker.
	r := trustBob(t, e, "touch", "instance", "vb", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stderr, paramsMean("vb")))
	assert.Equal(t, cmOf(v1alpha1.KindServiceInstance, "vb").Annotations[store.AnnotationAuthor], controlplane.BobUser)
	trustReconcile(t, e, e.teamB)
	assert.Check(t, leaked("vb"), "the parameters bob vouched for are sent")
	assert.Check(t, !leaked("va"))
}

// A Secret's value that must reach the broker only once its owner vouched for it.
const vouchVault = "vault-6b0e4d"
