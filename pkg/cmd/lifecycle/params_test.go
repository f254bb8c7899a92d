package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

func TestParamFlags_Input_ReadsTheFlagsForTheEngine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.json")
	assert.NilError(t, os.WriteFile(file, []byte(`{"storage_gb": 3}`), 0o600))
	for _, tc := range []struct {
		name  string
		flags ParamFlags
		stdin string
		want  engine.ParametersInput
		err   string
	}{
		{name: "nothing"},
		{name: "pairs as given", flags: ParamFlags{Params: []string{"a=1", "a=2"}}, want: engine.ParametersInput{Pairs: []string{"a=1", "a=2"}}},
		{name: "json", flags: ParamFlags{JSON: `{"a": 1}`}, want: engine.ParametersInput{Object: []byte(`{"a": 1}`)}},
		{name: "file", flags: ParamFlags{File: file}, want: engine.ParametersInput{Object: []byte(`{"storage_gb": 3}`)}},
		{name: "stdin", flags: ParamFlags{File: "-"}, stdin: `{"s": "in"}`, want: engine.ParametersInput{Object: []byte(`{"s": "in"}`)}},
		{name: "empty stdin", flags: ParamFlags{File: "-"}, want: engine.ParametersInput{Object: []byte{}}},
		{name: "secrets", flags: ParamFlags{FromSecret: []string{"all", "one/key"}}, want: engine.ParametersInput{FromSecret: []v1alpha1.ParametersFromSource{
			{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "all"}}, {SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "one", Key: "key"}},
		}}},
		{name: "missing file", flags: ParamFlags{File: file + ".nope"}, err: "cannot read --params-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.flags.Input(strings.NewReader(tc.stdin))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, tc.want)
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
