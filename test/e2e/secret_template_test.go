package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// tplDatabaseURL renders DATABASE_URL from the test broker's credentials.
const tplDatabaseURL = `keys:
  DATABASE_URL: 'postgresql://{{ userinfo .credentials.username .credentials.password }}@{{ .credentials.host }}:{{ .credentials.port }}/{{ .credentials.database }}?sslmode=require&application_name={{ .binding.name }}'
`

func tplWrite(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	assert.NilError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// tplWantURL is the DATABASE_URL the template renders from a Secret's own credentials.
func tplWantURL(data map[string][]byte, binding string) string {
	return "postgresql://" + url.UserPassword(string(data["username"]), string(data["password"])).String() + "@" +
		string(data["host"]) + ":" + string(data["port"]) + "/" + string(data["database"]) + "?sslmode=require&application_name=" + binding
}

// A template renders DATABASE_URL from the broker's credentials; a dry run names the keys
// with values masked; a template that cannot work is refused before anything is
// recorded; a rotation with a template that fails on the new credentials leaves the
// Secret as it was, says which key failed, and unbinds the new credentials.
func TestSecretTemplate_DatabaseURL_DryRunRefusalAndFailedRotation(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	dir := t.TempDir()
	good := tplWrite(t, dir, "good.yaml", tplDatabaseURL)

	r := e.run(t, "bind", "db", "--name", "web", "--secret-template", good, "--dry-run=client")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `Secret "web" would hold: DATABASE_URL=********`))
	_, ok := e.secret(t, "web")
	assert.Assert(t, !ok, "a dry run writes no Secret")

	before := bndSnapshot(t, e)
	bad := tplWrite(t, dir, "bad.yaml", "keys:\n  URL: '{{ .instance.nme }}'\n")
	r = e.run(t, "bind", "db", "--name", "bad", "--secret-template", bad)
	assert.Assert(t, r.ExitCode != 0)
	assert.Assert(t, is.Contains(r.Stderr, `binding "bad" not created: secret template key "URL"`))
	assert.Assert(t, is.Contains(r.Stderr, `map has no entry for key "nme"`))
	assert.Assert(t, is.Contains(r.Stderr, "fix the template"))
	assert.DeepEqual(t, bndSnapshot(t, e), before)
	assert.Assert(t, is.Len(bndBrokerBindings(e.b), 0))

	r = e.run(t, "bind", "db", "--name", "web", "--secret-template", good, "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	s, ok := e.secret(t, "web")
	assert.Assert(t, ok)
	assert.Equal(t, string(s.Data["DATABASE_URL"]), tplWantURL(s.Data, "web"))
	assert.Assert(t, !strings.Contains(r.Stderr+r.Stdout, string(s.Data["password"])), "the output shows a credential")
	old := e.binding(t, "web")

	// A template that fails on the new credentials: the rotation goes back to the old ones.
	fail := tplWrite(t, dir, "fail.yaml", "keys:\n  DATABASE_URL: '{{ .credentials.password }}{{ .credentials.nosuch }}'\n")
	r = e.run(t, "bind", "--rotate", "web", "--secret-template", fail, "--wait", "--interval", "200ms")
	assert.Assert(t, r.ExitCode != 0)
	assert.Assert(t, is.Contains(r.Stderr, `binding "web" not rotated`))
	assert.Assert(t, is.Contains(r.Stderr, `secret template key "DATABASE_URL"`))
	assert.Assert(t, is.Contains(r.Stderr, `map has no entry for key "nosuch"`))
	after, ok := e.secret(t, "web")
	assert.Assert(t, ok)
	assert.Equal(t, after.ResourceVersion, s.ResourceVersion, "the Secret is left as it was")
	assert.Assert(t, !strings.Contains(r.Stderr+r.Stdout, string(s.Data["password"])), "the output shows a credential")
	cur := e.binding(t, "web")
	assert.Equal(t, cur.CurrentExternalID(), old.CurrentExternalID())
	c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReady)
	assert.Assert(t, c != nil && c.Reason == "BindSecretTemplateFailed", "%+v", c)
	assert.DeepEqual(t, bndBrokerBindings(e.b), []string{old.CurrentExternalID()})

	// Fixed: the rotation renders the new credentials.
	r = e.run(t, "bind", "--rotate", "web", "--secret-template", good, "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	s, _ = e.secret(t, "web")
	assert.Equal(t, string(s.Data["DATABASE_URL"]), tplWantURL(s.Data, "web"))
	assert.Assert(t, e.binding(t, "web").CurrentExternalID() != old.CurrentExternalID())
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

// apply -f binds with spec.secretTemplate, and a manifest that changes the template
// rotates the binding with the new one.
func TestSecretTemplate_ApplyManifest(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	dir := t.TempDir()
	manifest := func(key string) string {
		return `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceBinding
metadata:
  name: web
spec:
  instanceName: db
  secretTemplate:
    only: true
    keys:
      ` + key + `: 'postgresql://{{ userinfo .credentials.username .credentials.password }}@{{ .credentials.host }}:{{ .credentials.port }}/{{ .credentials.database }}'
`
	}
	f := tplWrite(t, dir, "web.yaml", manifest("DATABASE_URL"))
	r := e.run(t, "apply", "-f", f, "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	s, ok := e.secret(t, "web")
	assert.Assert(t, ok)
	assert.DeepEqual(t, keysOfSecret(s.Data), []string{"DATABASE_URL", "provider", "type"})
	assert.Assert(t, is.Contains(string(s.Data["DATABASE_URL"]), "postgresql://"))
	old := e.binding(t, "web")

	f = tplWrite(t, dir, "web.yaml", manifest("SPRING_DATASOURCE_URL"))
	r = e.run(t, "apply", "-f", f, "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	s, _ = e.secret(t, "web")
	assert.DeepEqual(t, keysOfSecret(s.Data), []string{"SPRING_DATASOURCE_URL", "provider", "type"})
	assert.Assert(t, e.binding(t, "web").CurrentExternalID() != old.CurrentExternalID(), "the binding is rotated")
}

func keysOfSecret(data map[string][]byte) []string {
	var out []string
	for k := range data {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
