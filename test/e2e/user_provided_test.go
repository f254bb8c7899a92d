package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const (
	upsPassword    = "ups-e2e-pa55word"
	upsNewPassword = "ups-e2e-rotated-pa55word"
)

// TestUserProvided_ProvisionBindShareUpdateDeprovision runs a user-provided instance
// through its life with no broker anywhere: its credentials reach a binding in its own
// namespace and one in a namespace it is shared with, a change of the credentials reaches
// both, and nothing of them is ever in a ConfigMap or in the output.
func TestUserProvided_ProvisionBindShareUpdateDeprovision(t *testing.T) {
	t.Parallel()
	nsA, nsB := cp.NewNamespace(t), cp.NewNamespace(t)
	admin := limitsAdmin(t)
	ctx := context.Background()
	st := store.New(admin, nil)
	dir := t.TempDir()
	creds := filepath.Join(dir, "db.json")
	assert.NilError(t, os.WriteFile(creds, []byte(`{"host":"db.internal","port":5432,"password":"`+upsPassword+`"}`), 0o600))

	t.Run("bad input changes nothing", func(t *testing.T) {
		before := snapshotRecords(t, nsA)
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"--user-provided", "--credentials-json", `{"password":"` + upsPassword + `"`}, 2, "--credentials-json must be a JSON object of credentials"},
			{[]string{"--user-provided", "--credentials-json", `{"bad key!":"x"}`}, 2, `key "bad key!" is not a valid Secret key`},
			{[]string{"--user-provided", "--credentials-json", `{}`}, 2, "holds no credentials"},
			{[]string{"--user-provided", "--class", "postgresql", "--credentials-file", creds}, 2, "--user-provided takes no --class"},
			{[]string{"--user-provided"}, 2, "--user-provided needs its credentials"},
			{[]string{"--credentials-file", creds}, 2, "add --user-provided"},
			{[]string{"--user-provided", "--credentials-file", creds, "--credentials-json", `{"a":"b"}`}, 2, "give the credentials once"},
			{[]string{"--user-provided", "--credentials-keys", "password"}, 2, "--credentials-keys asks for each value in a terminal"},
			{[]string{"--user-provided", "--credentials-file", filepath.Join(dir, "missing.json")}, 1, "--credentials-file"},
			{[]string{"--user-provided", "--credentials-from-secret", "no-such-secret"}, 1, `Secret "no-such-secret" not found in namespace`},
			{[]string{"--user-provided", "--credentials-file", creds, "--route-service-url", "http://plain.example"}, 2, "--route-service-url: the scheme must be https"},
		} {
			r := instCatalog(t, nsA, append([]string{"provision", "db"}, tc.args...)...)
			assert.Equal(t, r.ExitCode, tc.code, "%v: %s", tc.args, r.Stderr)
			assert.Check(t, is.Contains(r.Stderr, tc.want), "%v", tc.args)
			assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, upsPassword), "a credential was printed: %v", tc.args)
		}
		assert.DeepEqual(t, snapshotRecords(t, nsA), before)
	})

	r := instCatalog(t, nsA, "provision", "db", "--user-provided", "--credentials-file", creds, "--syslog-drain-url", "syslog-tls://logs.example:6514")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `Instance "db" is ready`), r.Stderr)
	inst, err := st.Instances().Get(ctx, nsA, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Assert(t, inst.IsUserProvided())
	s, err := admin.CoreV1().Secrets(nsA).Get(ctx, "db-credentials", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["password"]), upsPassword)
	assert.Equal(t, string(s.Data["port"]), "5432")
	assert.Equal(t, s.OwnerReferences[0].UID, inst.UID, "the Secret belongs to the record")

	r = instCatalog(t, nsA, "get", "instances")
	assert.Assert(t, is.Contains(r.Stdout, "(user-provided)"), r.Stdout)
	r = instCatalog(t, nsA, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "Credential keys:  host, password, port, syslog_drain_url"), r.Stdout)

	// Bindings take no parameters; in its own namespace and, shared, in another.
	r = instCatalog(t, nsA, "bind", "db", "--name", "bad", "-p", "x=1")
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "take no parameters"), r.Stderr)
	r = instCatalog(t, nsA, "bind", "db", "--name", "app", "--rename-key", "host=DB_HOST")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "share", "db", "--to-namespace", nsB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsB, "bind", nsA+"/db", "--name", "remote")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, at := range []struct{ ns, name, hostKey string }{{nsA, "app", "DB_HOST"}, {nsB, "remote", "host"}} {
		s, err := admin.CoreV1().Secrets(at.ns).Get(ctx, at.name, metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, string(s.Data["password"]), upsPassword, at.name)
		assert.Equal(t, string(s.Data[at.hostKey]), "db.internal", at.name)
		assert.Equal(t, string(s.Data["syslog_drain_url"]), "syslog-tls://logs.example:6514", at.name)
		assert.Equal(t, string(s.Data["type"]), "user-provided", at.name)
	}

	// New credentials reach every binding, in both namespaces.
	r = instCatalog(t, nsA, "update", "db", "--credentials-json", `{"host":"db2.internal","password":"`+upsNewPassword+`"}`)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, !strings.Contains(r.Stdout+r.Stderr, upsNewPassword))
	for _, at := range []struct{ ns, name, hostKey string }{{nsA, "app", "DB_HOST"}, {nsB, "remote", "host"}} {
		s, err := admin.CoreV1().Secrets(at.ns).Get(ctx, at.name, metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, string(s.Data["password"]), upsNewPassword, at.name)
		assert.Equal(t, string(s.Data[at.hostKey]), "db2.internal", at.name)
	}
	inst, err = st.Instances().Get(ctx, nsA, "db")
	assert.NilError(t, err)
	assert.Assert(t, !inst.HasPendingWork(), "%+v", inst.Status)
	assert.Equal(t, inst.Spec.UserProvided.Revision, int64(1))

	// A broker-only change of a user-provided instance is refused, changing nothing.
	before := snapshotRecords(t, nsA, nsB)
	r = instCatalog(t, nsA, "update", "db", "--plan", "hobby")
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "is user-provided: it has no plan"), r.Stderr)
	assert.DeepEqual(t, snapshotRecords(t, nsA, nsB), before)

	// No credential is in any ConfigMap of either namespace.
	for _, ns := range []string{nsA, nsB} {
		cms, err := admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		assert.NilError(t, err)
		for _, cm := range cms.Items {
			for k, v := range cm.Data {
				assert.Assert(t, !strings.Contains(v, upsPassword) && !strings.Contains(v, upsNewPassword), "ConfigMap %s/%s key %s holds a credential", ns, cm.Name, k)
			}
		}
	}

	// Unshare removes the remote binding; deprovision removes the rest, Secrets included.
	r = instCatalog(t, nsA, "unshare", "db", "--from-namespace", nsB, "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsB, "reconcile")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "deprovision", "db", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	instWaitFor(t, "the instance, its binding and every Secret to go", time.Minute, func() bool {
		_, ierr := st.Instances().Get(ctx, nsA, "db")
		_, berr := st.Bindings().Get(ctx, nsB, "remote")
		secrets := 0
		for _, ns := range []string{nsA, nsB} {
			l, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: store.LabelManagedBy})
			assert.NilError(t, err)
			secrets += len(l.Items)
		}
		return store.IsNotFound(ierr) && store.IsNotFound(berr) && secrets == 0
	})
}

// TestUserProvided_CredentialsKeys_AskedWithoutEcho provisions a user-provided instance
// whose credentials are typed in a terminal: the values never appear on the terminal
// (survey's password prompt echoes no character of them), and they land in the Secret.
func TestUserProvided_CredentialsKeys_AskedWithoutEcho(t *testing.T) {
	t.Parallel()
	ns := cp.NewNamespace(t)
	cmd, term := instStartInPTY(t, ns, "provision", "db", "--user-provided", "--credentials-keys", "username,password")

	term.answer("Credential username:", "app\r")
	term.answer("Credential password:", upsPassword+"\r")

	err := term.exited(cmd, 60*time.Second, "the CLI did not finish")
	assert.NilError(t, err, "the CLI failed; the terminal shows:\n%q", term.text())
	term.waitShows(`Instance "db" is ready`)
	assert.Assert(t, !strings.Contains(term.text(), upsPassword), "the password was echoed:\n%q", term.text())
	s, err := limitsAdmin(t).CoreV1().Secrets(ns).Get(context.Background(), "db-credentials", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["username"]), "app")
	assert.Equal(t, string(s.Data["password"]), upsPassword)
}
