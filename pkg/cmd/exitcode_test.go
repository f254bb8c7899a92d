package cmd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// usageCases are a usage mistake for every runnable command: each exits 2 before any
// cluster is contacted, and prints what testdata/usage/NAME.golden holds.
var usageCases = []struct {
	name string
	args []string
}{
	{"root-unknown-command", []string{"gett"}},
	{"version-extra-argument", []string{"version", "now"}},
	{"completion-unknown-shell", []string{"completion", "tcsh"}},
	{"init-extra-argument", []string{"init", "now"}},
	{"init-bad-dry-run", []string{"init", "--dry-run=later"}},
	{"adopt-extra-argument", []string{"adopt", "team-a"}},
	{"register-no-name", []string{"register"}},
	{"register-no-url", []string{"register", "acme"}},
	{"deregister-no-name", []string{"deregister"}},
	{"sync-unknown-noun", []string{"sync", "brokr", "acme"}},
	{"sync-broker-no-name", []string{"sync", "broker"}},
	{"marketplace-bad-output", []string{"marketplace", "-o", "table"}},
	{"get-unknown-noun", []string{"get", "brokrs"}},
	{"get-brokers-bad-output", []string{"get", "brokers", "-o", "xml"}},
	{"get-classes-bad-output", []string{"get", "classes", "-o", "xml"}},
	{"get-plans-bad-output", []string{"get", "plans", "-o", "xml"}},
	{"get-instances-bad-output", []string{"get", "instances", "-o", "xml"}},
	{"get-bindings-bad-output", []string{"get", "bindings", "-o", "xml"}},
	{"describe-unknown-noun", []string{"describe", "instanse", "db"}},
	{"describe-broker-no-name", []string{"describe", "broker"}},
	{"describe-class-no-name", []string{"describe", "class"}},
	{"describe-plan-no-name", []string{"describe", "plan"}},
	{"describe-instance-no-name", []string{"describe", "instance"}},
	{"describe-binding-no-name", []string{"describe", "binding"}},
	{"provision-no-name", []string{"provision"}},
	{"apply-no-filename", []string{"apply"}},
	{"diff-no-filename", []string{"diff"}},
	{"delete-no-filename", []string{"delete"}},
	{"provision-credentials-without-user-provided", []string{"provision", "db", "--credentials-json", "{}"}},
	{"provision-user-provided-without-credentials", []string{"provision", "db", "--user-provided"}},
	{"update-nothing-to-update", []string{"update", "db"}},
	{"deprovision-two-names", []string{"deprovision", "a", "b"}},
	{"touch-unknown-noun", []string{"touch", "instanse", "db"}},
	{"touch-instance-no-name", []string{"touch", "instance"}},
	{"wait-nothing-to-wait-for", []string{"wait"}},
	{"wait-bad-for", []string{"wait", "instance/db", "--for=jsonpath={.status}"}},
	{"wait-bad-for-control-characters", []string{"wait", "instance/db", "--for=\x1b]0;owned\x07\x1b[2J"}},
	{"bind-kind-not-projectable", []string{"bind", "db", "--to", "pod/x"}},
	{"bind-job", []string{"bind", "db", "--to", "job/migrate"}},
	{"unbind-no-name", []string{"unbind"}},
	{"share-no-namespace", []string{"share", "db"}},
	{"unshare-no-namespace", []string{"unshare", "db"}},
	{"access-unknown-command", []string{"access", "enabel", "postgresql"}},
	{"access-enable-no-class", []string{"access", "enable"}},
	{"access-disable-no-class", []string{"access", "disable"}},
	{"access-list-argument", []string{"access", "list", "x"}},
	{"access-disable-no-scope", []string{"access", "disable", "redis"}},
	{"access-enable-namespace-and-all", []string{"access", "enable", "redis", "-n", "team-a", "-A"}},
	{"graph-bad-output", []string{"graph", "-o", "png"}},
	{"reconcile-unknown-command", []string{"reconcile", "now"}},
	{"reconcile-install-argument", []string{"reconcile", "install", "x"}},
	{"reconcile-uninstall-argument", []string{"reconcile", "uninstall", "x"}},
	{"migrate-unknown-noun", []string{"migrate", "catalog"}},
	{"migrate-svcat-argument", []string{"migrate", "svcat", "x"}},
	{"export-names-with-all-namespaces", []string{"export", "db", "-A"}},
	{"release-without-new-cluster", []string{"release", "-n", "shop"}},
	{"doctor-argument", []string{"doctor", "x"}},
	{"rbac-argument", []string{"rbac", "x"}},
	// Checked before any cluster is contacted.
	{"provision-bad-params-json", []string{"provision", "db", "--class", "postgresql", "--params-json", `{"size": 1`}},
	{"provision-params-json-not-object", []string{"provision", "db", "--class", "postgresql", "--params-json", `[1, 2]`}},
	{"provision-missing-params-file", []string{"provision", "db", "--class", "postgresql", "--params-file", "testdata/no-such-file.json"}},
	{"provision-invalid-name", []string{"provision", "My_DB", "--class", "postgresql"}},
	{"provision-svcat-secret-flag", []string{"provision", "db", "--class", "postgresql", "-s", "mysecret[key]"}},
	{"register-ca-and-skip-tls", []string{"register", "acme", "--url", "https://broker.example", "--ca-file", "ca.pem", "--broker-insecure-skip-tls-verify"}},
	{"reconcile-dry-run-server", []string{"reconcile", "--dry-run=server"}},
	{"reconcile-dry-run-bad", []string{"reconcile", "--dry-run=true"}},
	{"doctor-old-timeout-flag", []string{"doctor", "--timeout", "3s"}},
	{"unbind-dry-run-and-wait", []string{"unbind", "db", "--dry-run=server", "--wait"}},
	{"touch-dry-run-and-wait", []string{"touch", "instance", "db", "--dry-run", "--wait"}},
	{"deregister-dry-run-bad", []string{"deregister", "acme", "--dry-run=yes"}},
	{"share-bad-output", []string{"share", "db", "--to-namespace", "team-b", "-o", "table"}},
	{"bind-dry-run-bad", []string{"bind", "db", "--dry-run=maybe"}},
}

// TestExitCode_UsageMistakes: every case exits 2 with the error and the --help hint of
// its command on stderr, nothing on stdout, as in testdata/usage.
func TestExitCode_UsageMistakes(t *testing.T) {
	stableEnvironment(t)
	for _, tc := range usageCases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
			code := Execute(context.Background(), f, tc.args)
			assert.Equal(t, code, cmdutil.ExitUsage, errOut.String())
			assert.Equal(t, out.String(), "")
			assert.Assert(t, is.Contains(errOut.String(), "--help' for usage."))
			golden(t, filepath.Join("usage", tc.name+".golden"), errOut.String())
			assert.Check(t, !strings.ContainsAny(errOut.String(), "\x1b\x07"), "a control character reached the terminal: %q", errOut.String())
		})
	}
}

// TestExitCode_EveryCommandHasAUsageCase: a new command gets a case in usageCases.
func TestExitCode_EveryCommandHasAUsageCase(t *testing.T) {
	covered := map[string]bool{}
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}))
	root := NewCmdRoot(f)
	for _, tc := range usageCases {
		c, _, err := root.Find(tc.args)
		assert.NilError(t, err)
		covered[c.CommandPath()] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" {
			return
		}
		assert.Check(t, covered[c.CommandPath()], "%s has no case in usageCases", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestExitCode_Failures: a command that fails (what it names does not exist) exits 1,
// says what is missing, and changes nothing.
func TestExitCode_Failures(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"describe", "instance", "nope"}, `"nope"`},
		{[]string{"describe", "binding", "nope"}, `"nope"`},
		{[]string{"describe", "broker", "nope"}, `broker "nope" not found`},
		{[]string{"describe", "class", "nope"}, `"nope"`},
		{[]string{"describe", "plan", "postgresql/nope"}, `"nope"`},
		{[]string{"get", "brokers", "nope"}, `"nope"`},
		{[]string{"deregister", "nope"}, `broker "nope" not found`},
		{[]string{"sync", "broker", "nope"}, `broker "nope" not found`},
		{[]string{"deprovision", "nope", "--yes"}, `"nope"`},
		{[]string{"update", "nope", "-p", "a=b"}, `"nope"`},
		{[]string{"touch", "instance", "nope"}, `"nope"`},
		{[]string{"bind", "nope"}, `"nope"`},
		{[]string{"unbind", "nope", "--yes"}, `"nope"`},
		{[]string{"share", "nope", "--to-namespace", "prod"}, `"nope"`},
		{[]string{"unshare", "nope", "--from-namespace", "prod", "--yes"}, `"nope"`},
		{[]string{"provision", "x", "--class", "nope"}, `"nope"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c := completionCluster(t)
			before := snapshotConfigMaps(t, c)
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			var out, errOut bytes.Buffer
			f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
			f.UseClients(c.Core, c.Metadata)
			code := Execute(context.Background(), f, append([]string{"-n", "dev"}, tc.args...))
			assert.Equal(t, code, cmdutil.ExitError, errOut.String())
			assert.Assert(t, is.Contains(errOut.String(), tc.want))
			assert.Assert(t, !strings.Contains(errOut.String(), "--help' for usage."))
			assert.DeepEqual(t, snapshotConfigMaps(t, c), before)
		})
	}
}

// snapshotConfigMaps is every ConfigMap's and Secret's name and resourceVersion.
func snapshotConfigMaps(t *testing.T, c *storetest.Cluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	cms, err := c.Core.CoreV1().ConfigMaps("").List(context.Background(), metav1ListOptions())
	assert.NilError(t, err)
	for _, cm := range cms.Items {
		out["cm/"+cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	secrets, err := c.Core.CoreV1().Secrets("").List(context.Background(), metav1ListOptions())
	assert.NilError(t, err)
	for _, s := range secrets.Items {
		out["secret/"+s.Namespace+"/"+s.Name] = s.ResourceVersion
	}
	return out
}

func metav1ListOptions() metav1.ListOptions { return metav1.ListOptions{} }
