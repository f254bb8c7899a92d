package lifecycle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

const testSchema = `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object",
"properties":{"storage_gb":{"type":"integer"},"ha":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}}}}`

func TestParamFlags_Inline(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.json")
	assert.NilError(t, os.WriteFile(file, []byte(`{"storage_gb": 3, "name": "from-file"}`), 0o600))
	for _, tc := range []struct {
		name  string
		flags ParamFlags
		stdin string
		want  string // JSON of the result, or the error
		usage bool
	}{
		{name: "nothing", want: `{}`},
		{name: "typed by the schema", flags: ParamFlags{Params: []string{"storage_gb=5", "ha=true", "tags=a"}}, want: `{"ha":true,"storage_gb":5,"tags":["a"]}`},
		{name: "untyped stays a string", flags: ParamFlags{Params: []string{"x=5"}}, want: `{"x":"5"}`},
		{name: "a value with = and an empty value", flags: ParamFlags{Params: []string{"url=a=b", "empty="}}, want: `{"empty":"","url":"a=b"}`},
		{name: "json", flags: ParamFlags{JSON: `{"a": {"b": [1, 2.5]}}`}, want: `{"a":{"b":[1,2.5]}}`},
		{name: "big numbers keep their digits", flags: ParamFlags{JSON: `{"n": 12345678901234567890}`}, want: `{"n":12345678901234567890}`},
		{name: "-p overrides json", flags: ParamFlags{JSON: `{"storage_gb": 1, "keep": true}`, Params: []string{"storage_gb=9"}}, want: `{"keep":true,"storage_gb":9}`},
		{name: "file", flags: ParamFlags{File: file}, want: `{"name":"from-file","storage_gb":3}`},
		{name: "stdin", flags: ParamFlags{File: "-"}, stdin: `{"s": "in"}`, want: `{"s":"in"}`},
		{name: "empty stdin", flags: ParamFlags{File: "-"}, stdin: ``, want: `{}`},
		{name: "missing file", flags: ParamFlags{File: file + ".nope"}, want: "cannot read --params-file"},
		{name: "not json", flags: ParamFlags{JSON: `{`}, want: "JSON object", usage: true},
		{name: "an array", flags: ParamFlags{JSON: `[1]`}, want: "JSON object", usage: true},
		{name: "null", flags: ParamFlags{JSON: `null`}, want: "JSON object", usage: true},
		{name: "a string", flags: ParamFlags{JSON: `"x"`}, want: "JSON object", usage: true},
		{name: "trailing data", flags: ParamFlags{JSON: `{"a": 1} {"b": 2}`}, want: "JSON object", usage: true},
		{name: "-p without =", flags: ParamFlags{Params: []string{"novalue"}}, want: "key=value", usage: true},
		{name: "-p with empty key", flags: ParamFlags{Params: []string{"=v"}}, want: "key=value", usage: true},
		{name: "-p of the wrong type", flags: ParamFlags{Params: []string{"storage_gb=lots"}}, want: "storage_gb", usage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.flags.Inline(strings.NewReader(tc.stdin), json.RawMessage(testSchema))
			if strings.HasPrefix(tc.want, "{") {
				assert.NilError(t, err)
				b, _ := json.Marshal(got)
				assert.Equal(t, string(b), tc.want)
				return
			}
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err) == cmdutil.ExitUsage, tc.usage, "%v", err)
		})
	}
}

func TestParamFlags_ValidateAndGiven(t *testing.T) {
	assert.ErrorContains(t, (&ParamFlags{JSON: "{}", File: "f"}).Validate(), "cannot be used together")
	assert.NilError(t, (&ParamFlags{JSON: "{}", Params: []string{"a=1"}, FromSecret: []string{"s"}}).Validate())
	assert.Assert(t, !(&ParamFlags{FromSecret: []string{"s"}}).Given(), "secrets are not inline parameters")
	assert.Assert(t, (&ParamFlags{File: "-"}).Given())
}

func TestParseSecretRefs(t *testing.T) {
	got, err := ParseSecretRefs([]string{"all", "one/key", "deep/a/b"})
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []v1alpha1.ParametersFromSource{
		{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "all"}},
		{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "one", Key: "key"}},
		{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "deep", Key: "a/b"}},
	})
	for _, bad := range []string{"", "/key"} {
		_, err := ParseSecretRefs([]string{bad})
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%q: %v", bad, err)
	}
}

func TestWaitFlags_Validate(t *testing.T) {
	assert.NilError(t, (&WaitFlags{Interval: time.Second}).Validate())
	assert.NilError(t, (&WaitFlags{Wait: true, Timeout: -1, Interval: time.Millisecond}).Validate())
	assert.Equal(t, cmdutil.ExitCode((&WaitFlags{}).Validate()), cmdutil.ExitUsage)
}

func TestExactlyOneName(t *testing.T) {
	cmd := &cobra.Command{Use: "provision"}
	assert.NilError(t, ExactlyOneName(cmd, []string{"db"}))
	for _, args := range [][]string{nil, {""}, {"a", "b"}} {
		err := ExactlyOneName(cmd, args)
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%q: %v", args, err)
	}
}
