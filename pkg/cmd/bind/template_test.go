package bind

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func TestReadSecretTemplate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		assert.NilError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	got, err := ReadSecretTemplate(write("ok.yaml", "keys:\n  DATABASE_URL: 'postgres://{{ .credentials.host }}'\nonly: true\n"))
	assert.NilError(t, err)
	assert.DeepEqual(t, got, &v1alpha1.SecretTemplate{Keys: map[string]string{"DATABASE_URL": "postgres://{{ .credentials.host }}"}, Only: true})

	for _, tc := range []struct{ name, content, want string }{
		{"unknown field", "keys: {A: x}\nonyl: true\n", `unknown field "onyl"`},
		{"not a map", "- a\n", "not a secret template"},
		{"does not parse", "keys: {A: '{{ .x '}\n", `secret template key "A": the template does not parse`},
		{"no keys", "only: true\n", "secret template has no keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name+".yaml", tc.content)
			_, err := ReadSecretTemplate(p)
			assert.ErrorContains(t, err, "--secret-template "+p+": ")
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err = ReadSecretTemplate(filepath.Join(dir, "missing.yaml"))
	assert.ErrorContains(t, err, "no such file")
}
