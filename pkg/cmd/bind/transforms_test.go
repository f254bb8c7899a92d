package bind_test

import (
	"io"
	"testing"

	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/bind"
)

func newFlagSet() (*pflag.FlagSet, *bind.TransformFlags) {
	fs := pflag.NewFlagSet("bind", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f bind.TransformFlags
	f.AddFlags(fs)
	return fs, &f
}

func TestTransformFlags_KeepTheCommandLineOrder(t *testing.T) {
	fs, f := newFlagSet()
	err := fs.Parse([]string{
		"--remove-key", "uri",
		"--rename-key=username=user",
		"--add-keys-from-secret", "db-extra",
		"--add-key", "type=postgresql",
		"--rename-key", "password=pass",
		"--add-key", "url=jdbc:postgresql://db?ssl=true",
		"--remove-key", "port",
	})
	assert.NilError(t, err)
	assert.DeepEqual(t, f.Transforms(), []v1alpha1.SecretTransform{
		{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "uri"}},
		{RenameKey: &v1alpha1.RenameKeyTransform{From: "username", To: "user"}},
		{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: "db-extra"}}},
		{AddKey: &v1alpha1.AddKeyTransform{Key: "type", StringValue: ptr.To("postgresql")}},
		{RenameKey: &v1alpha1.RenameKeyTransform{From: "password", To: "pass"}},
		{AddKey: &v1alpha1.AddKeyTransform{Key: "url", StringValue: ptr.To("jdbc:postgresql://db?ssl=true")}},
		{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "port"}},
	})
	assert.Equal(t, fs.Lookup("rename-key").Value.String(), "[username=user,password=pass]")
}

func TestTransformFlags_NoneGiven(t *testing.T) {
	fs, f := newFlagSet()
	assert.NilError(t, fs.Parse(nil))
	assert.Check(t, is.Nil(f.Transforms()))
}

func TestTransformFlags_TransformsIsACopy(t *testing.T) {
	fs, f := newFlagSet()
	assert.NilError(t, fs.Parse([]string{"--add-key", "a=b"}))
	f.Transforms()[0].AddKey.Key = "changed"
	assert.Equal(t, f.Transforms()[0].AddKey.Key, "a")
}

func TestTransformFlags_RejectMalformedValues(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"--rename-key", "a"},
			wantErr: `--rename-key "a": expected FROM=TO with an "="; for example --rename-key username=user`},
		{args: []string{"--rename-key", "=b"},
			wantErr: `--rename-key "=b": expected FROM=TO, the part before "=" is empty; for example --rename-key username=user`},
		{args: []string{"--rename-key", "a="},
			wantErr: `--rename-key "a=": expected FROM=TO, the part after "=" is empty; for example --rename-key username=user`},
		{args: []string{"--rename-key", "a=b c"},
			wantErr: `--rename-key "a=b c": "b c" is not a valid Secret key: a valid config key must consist of alphanumeric characters, '-', '_' or '.'`},
		{args: []string{"--rename-key", "a/b=c"},
			wantErr: `--rename-key "a/b=c": "a/b" is not a valid Secret key`},
		{args: []string{"--add-key", "type"},
			wantErr: `--add-key "type": expected KEY=VALUE with an "="; for example --add-key type=postgresql`},
		{args: []string{"--add-key", "=postgresql"},
			wantErr: `--add-key "=postgresql": expected KEY=VALUE, the part before "=" is empty; for example --add-key type=postgresql`},
		{args: []string{"--add-key", "type="},
			wantErr: `--add-key "type=": expected KEY=VALUE, the part after "=" is empty; for example --add-key type=postgresql`},
		{args: []string{"--add-key", "ty pe=x"},
			wantErr: `--add-key "ty pe=x": "ty pe" is not a valid Secret key`},
		{args: []string{"--add-keys-from-secret", "Extra_Settings"},
			wantErr: `--add-keys-from-secret "Extra_Settings": not a valid Secret name: a lowercase RFC 1123 subdomain must consist of`},
		{args: []string{"--add-keys-from-secret", ""},
			wantErr: `--add-keys-from-secret "": not a valid Secret name`},
		{args: []string{"--remove-key", "a b"},
			wantErr: `--remove-key "a b": "a b" is not a valid Secret key`},
		{args: []string{"--remove-key", "."},
			wantErr: `--remove-key ".": "." is not a valid Secret key: must not be '.'; for example --remove-key uri`},
	}
	for _, tc := range tests {
		t.Run(tc.args[0]+" "+tc.args[1], func(t *testing.T) {
			fs, f := newFlagSet()
			err := fs.Parse(append([]string{"--add-key", "ok=1"}, tc.args...))
			assert.Check(t, is.ErrorContains(err, tc.wantErr))
			assert.Check(t, is.ErrorContains(err, "for example --"+tc.args[0][2:]+" "))
			assert.Check(t, is.Len(f.Transforms(), 1), "a rejected value adds no transform")
		})
	}
}

func TestTransformFlags_Help(t *testing.T) {
	fs, _ := newFlagSet()
	golden.Assert(t, fs.FlagUsagesWrapped(100), "transform-flags.golden")
}
