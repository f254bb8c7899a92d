package projection

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func TestForbiddenEnvName_LoaderAndInterpreterVariables(t *testing.T) {
	for _, name := range []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "BASH_FUNC_ls%%", "BASH_ENV", "ENV",
		"NODE_OPTIONS", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5LIB", "PERL5OPT", "RUBYOPT",
		"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GCONV_PATH", "PATH", "DOTNET_STARTUP_HOOKS",
	} {
		assert.Check(t, ForbiddenEnvName(name), name)
	}
	for _, name := range []string{"host", "password", "DATABASE_URL", "DB_LD_PRELOAD", "ld_preload", "ENVIRONMENT", "PATHS", "MY_PATH"} {
		assert.Check(t, !ForbiddenEnvName(name), name)
	}
	assert.Assert(t, is.Contains(ForbiddenEnv(), "LD_*"))
	assert.Assert(t, is.Contains(ForbiddenEnv(), "NODE_OPTIONS"))
}

func TestForbiddenKeys_OnlyWhereAProjectionMakesThemVariables(t *testing.T) {
	keys := []string{"password", "LD_PRELOAD", "PATH", "ENV", "host"}
	for _, tc := range []struct {
		name string
		ps   []v1alpha1.WorkloadProjection
		want []LeftOutKey
	}{
		{name: "no projection"},
		{name: "files", ps: []v1alpha1.WorkloadProjection{{Kind: KindDeployment, Name: "web"}}},
		{name: "env", ps: []v1alpha1.WorkloadProjection{{Kind: KindDeployment, Name: "web", Env: true}},
			want: []LeftOutKey{{"ENV", "ENV"}, {"LD_PRELOAD", "LD_PRELOAD"}, {"PATH", "PATH"}}},
		{name: "prefix", ps: []v1alpha1.WorkloadProjection{{Kind: KindDeployment, Name: "web", Env: true, EnvPrefix: "DB_"}}},
		{name: "prefix that completes a name", ps: []v1alpha1.WorkloadProjection{{Kind: KindStatefulSet, Name: "web", Env: true, EnvPrefix: "BASH_"}},
			want: []LeftOutKey{{"ENV", "BASH_ENV"}}},
		{name: "prefix alone implies env", ps: []v1alpha1.WorkloadProjection{{Kind: KindCronJob, Name: "web", EnvPrefix: "PYTHON"}},
			want: []LeftOutKey{{"PATH", "PYTHONPATH"}}},
		{name: "files and env", ps: []v1alpha1.WorkloadProjection{{Kind: KindDaemonSet, Name: "a"}, {Kind: KindDeployment, Name: "b", Env: true}},
			want: []LeftOutKey{{"ENV", "ENV"}, {"LD_PRELOAD", "LD_PRELOAD"}, {"PATH", "PATH"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, ForbiddenKeys(keys, tc.ps), tc.want)
		})
	}
	assert.Equal(t, LeftOutKey{"ENV", "BASH_ENV"}.String(), "ENV (as BASH_ENV)")
	assert.Equal(t, LeftOutKey{"PATH", "PATH"}.String(), "PATH")
}

func TestCheckEnvPrefix_RefusesPrefixesThatMakeEveryKeyALoaderVariable(t *testing.T) {
	for _, p := range []string{"LD_", "LD_X", "DYLD_", "BASH_FUNC_"} {
		err := CheckEnvPrefix(p)
		assert.Check(t, err != nil, p)
		if err != nil {
			assert.Check(t, is.Contains(err.Error(), "choose another prefix"))
		}
	}
	for _, p := range []string{"", "DB_", "APP", "L"} {
		assert.Check(t, CheckEnvPrefix(p), p)
	}
}

func TestUnprefixedEnv(t *testing.T) {
	assert.Assert(t, UnprefixedEnv(nil) == nil)
	assert.Assert(t, UnprefixedEnv([]v1alpha1.WorkloadProjection{{Name: "a"}, {Name: "b", Env: true, EnvPrefix: "X_"}}) == nil)
	p := UnprefixedEnv([]v1alpha1.WorkloadProjection{{Name: "a"}, {Name: "b", Env: true}})
	assert.Assert(t, p != nil && p.Name == "b")
}
