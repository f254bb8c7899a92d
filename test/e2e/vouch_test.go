package e2e

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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// The commands doctor and reconcile's refusals recommend, "sync broker" and "adopt",
// make whoever runs them the author of a broker record, and so send its credentials
// Secret to its URL on her authority. alice, who may write ConfigMaps in bob's namespace
// but not read its Secrets, writes two broker records there that point bob's broker
// credentials at her own server: one under the trust policy in force, one without its
// token (as if written before it). bob runs what doctor recommends: without a terminal
// and without --yes nothing changes and her server gets nothing; the dry run and the
// terminal show him the Secret and the URL, and a "no" changes nothing; with --yes he
// vouches for it knowingly.
func TestVouch_SyncBrokerAndAdopt_ShowTheSecretAndURLAndAskFirst(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	vouchAliceWritesConfigMaps(t, e, e.teamB)
	_, err := e.admin.CoreV1().Secrets(e.teamB).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bob-broker-auth"},
		StringData: map[string]string{"username": "bob", "password": vouchBobBrokerPassword}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	forged := func(name string) *v1alpha1.Broker {
		return &v1alpha1.Broker{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindBroker},
			ObjectMeta: metav1.ObjectMeta{Namespace: e.teamB, Name: name},
			Spec: v1alpha1.BrokerSpec{URL: e.attackerURL, Scope: v1alpha1.ScopeNamespace,
				Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "bob-broker-auth"}}},
		}
	}
	trustForge(t, e, forged("shared"), trustStamped)
	trustForge(t, e, forged("legacy"), trustUnverified)
	authorOf := func(name string) string {
		t.Helper()
		cm, err := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, store.ConfigMapName(v1alpha1.KindBroker, name), metav1.GetOptions{})
		assert.NilError(t, err)
		return cm.Annotations[store.AnnotationAuthor]
	}
	leaked := func() bool {
		for _, r := range e.attacker.requests() {
			if strings.Contains(r, "Authorization") {
				return true
			}
		}
		return false
	}
	means := `its credentials, Secret "bob-broker-auth" in namespace "` + e.teamB + `", go to "` + e.attackerURL + `"`

	// doctor recommends "sync broker" for the broker no one vouches for, saying what it means.
	var fix string
	for _, c := range trustDoctorOf(t, e, e.teamB) {
		if strings.Contains(c.Fix, "kubectl catalog sync broker legacy") {
			fix = c.Fix
		}
	}
	assert.Check(t, is.Contains(fix, "makes you its author: its credentials Secret then goes to its URL on your authority"), "doctor: %q", fix)

	// No terminal, no --yes: refused, naming the flag, after saying what it would mean.
	for _, name := range []string{"shared", "legacy"} {
		r := trustBob(t, e, "sync", "broker", name, "--scope", "namespace")
		assert.Assert(t, r.ExitCode != 0, "%s: %s", name, r.Stdout)
		assert.Check(t, is.Contains(r.Stderr, means), name)
		assert.Check(t, is.Contains(r.Stderr, "--yes"), name)
		assert.Equal(t, authorOf(name), controlplane.AliceUser, "%s: nothing changed", name)
	}
	r := trustBob(t, e, "adopt")
	assert.Assert(t, r.ExitCode != 0, r.Stdout)
	assert.Check(t, is.Contains(r.Stderr, means))
	assert.Check(t, is.Contains(r.Stderr, "--yes"))
	assert.Equal(t, authorOf("legacy"), controlplane.AliceUser, "adopt changed nothing")
	assert.Assert(t, !leaked(), "alice's server got bob's credentials: %v", e.attacker.requests())

	// The dry runs show it and change nothing.
	r = trustBob(t, e, "sync", "broker", "shared", "--scope", "namespace", "--dry-run")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stderr, means))
	assert.Check(t, is.Contains(r.Stderr, `written by "`+controlplane.AliceUser+`"`))
	r = trustBob(t, e, "adopt", "--dry-run")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stderr, means))
	assert.Equal(t, authorOf("shared"), controlplane.AliceUser)
	assert.Equal(t, authorOf("legacy"), controlplane.AliceUser)

	// At a terminal: shown, asked, and a no changes nothing.
	cmd, term := startInPTY(t, e.teamB, []string{"KUBECONFIG=" + cp.Kubeconfig(controlplane.BobUser)}, 400,
		"--catalog-namespace", e.catalogNS, "sync", "broker", "shared", "--scope", "namespace")
	term.answer("Continue?", "n\r")
	err = term.exited(cmd, 30*time.Second, "sync broker did not end after the no")
	assert.Assert(t, err != nil, "a no is not a success")
	assert.Check(t, is.Contains(term.text(), "go to \""+e.attackerURL+"\""))
	term.waitShows("Nothing was changed.")
	assert.Equal(t, authorOf("shared"), controlplane.AliceUser)
	assert.Assert(t, !leaked(), "alice's server got bob's credentials: %v", e.attacker.requests())

	// With --yes bob vouches for it knowingly: he is its author, and it is called.
	r = trustBob(t, e, "sync", "broker", "legacy", "--scope", "namespace", "--yes")
	assert.Check(t, is.Contains(r.Stderr, means))
	assert.Equal(t, authorOf("legacy"), controlplane.BobUser)
	assert.Assert(t, leaked(), "the broker bob vouched for is called with its credentials")
}

// vouchAliceWritesConfigMaps gives alice every verb on ConfigMaps in ns, and nothing
// else there.
func vouchAliceWritesConfigMaps(t *testing.T, e *trustEnv, ns string) {
	t.Helper()
	grantRole(t, e.admin, ns, "alice-configmaps", configMapRules("*"), listsConfigMaps(e.alice, ns), controlplane.AliceUser)
}

// The password of bob's broker credentials, which must reach no server bob did not
// vouch for.
const vouchBobBrokerPassword = "bob-broker-9d27c5"
