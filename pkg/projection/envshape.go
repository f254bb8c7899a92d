package projection

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// What crosses into a consumer's workload as environment variables is shaped by the
// consumer: a key of the credentials becomes a variable only under a name that cannot
// change which code the container runs. Loader and interpreter variables (LD_PRELOAD,
// BASH_ENV, NODE_OPTIONS, ...) are never projected, whoever chose the key: the broker,
// the owner of a shared instance, or the binding's own transforms. The list is
// docs/security.md's ("Environment variables").

// forbiddenEnvPrefixes begin the names of the variables of dynamic loaders (glibc, musl,
// macOS) and of exported bash functions.
var forbiddenEnvPrefixes = []string{"LD_", "DYLD_", "BASH_FUNC_"}

// forbiddenEnvNames are variables that make a shell, an interpreter or a runtime load,
// run or find code of the value's choosing, or change which program a name runs.
var forbiddenEnvNames = []string{
	// shells
	"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "PATH", "CDPATH",
	// glibc
	"GCONV_PATH", "LOCPATH", "HOSTALIASES", "RES_OPTIONS", "NLSPATH", "MALLOC_TRACE",
	// Node.js
	"NODE_OPTIONS", "NODE_PATH",
	// Python
	"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
	// Perl
	"PERL5LIB", "PERL5OPT", "PERLLIB", "PERL5DB",
	// Ruby
	"RUBYOPT", "RUBYLIB",
	// Java
	"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
	// .NET
	"DOTNET_STARTUP_HOOKS", "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER", "CORECLR_PROFILER_PATH",
	// PHP, Lua, Git
	"PHPRC", "PHP_INI_SCAN_DIR", "LUA_INIT", "LUA_PATH", "LUA_CPATH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
}

// ForbiddenEnvName reports whether name is a loader or interpreter variable that is
// never projected into a workload. Names are compared as the programs read them,
// case-sensitively.
func ForbiddenEnvName(name string) bool {
	if slices.Contains(forbiddenEnvNames, name) {
		return true
	}
	for _, p := range forbiddenEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ForbiddenEnv lists the loader and interpreter variables: the names, then the prefixes
// (with a trailing "*"), for messages and documentation.
func ForbiddenEnv() []string {
	out := slices.Clone(forbiddenEnvNames)
	for _, p := range forbiddenEnvPrefixes {
		out = append(out, p+"*")
	}
	return out
}

// CheckEnvPrefix refuses a prefix under which every key would become a loader or
// interpreter variable (LD_, DYLD_, BASH_FUNC_ and their longer forms).
func CheckEnvPrefix(prefix string) error {
	for _, p := range forbiddenEnvPrefixes {
		if strings.HasPrefix(prefix, p) {
			return fmt.Errorf("--env-prefix %q makes every key a loader variable (%s*), which is never projected: choose another prefix, e.g. --env-prefix DB_", prefix, p)
		}
	}
	return nil
}

// LeftOutKey is a key of the credentials that an environment-variable projection would
// turn into a loader or interpreter variable.
type LeftOutKey struct {
	// Key is the Secret's key; Name the variable it would become.
	Key, Name string
}

func (k LeftOutKey) String() string {
	if k.Key == k.Name {
		return k.Key
	}
	return k.Key + " (as " + k.Name + ")"
}

// ForbiddenKeys are the keys that one of the environment-variable projections of ps
// would turn into a loader or interpreter variable (ForbiddenEnvName), sorted by key.
// File projections turn no key into a variable.
func ForbiddenKeys(keys []string, ps []v1alpha1.WorkloadProjection) []LeftOutKey {
	var out []LeftOutKey
	for _, k := range slices.Sorted(slices.Values(keys)) {
		for _, p := range ps {
			if p.Env || p.EnvPrefix != "" {
				if n := p.EnvPrefix + k; ForbiddenEnvName(n) {
					out = append(out, LeftOutKey{Key: k, Name: n})
					break
				}
			}
		}
	}
	return out
}

// UnprefixedEnv is the first environment-variable projection of ps without a prefix, or
// nil.
func UnprefixedEnv(ps []v1alpha1.WorkloadProjection) *v1alpha1.WorkloadProjection {
	for i := range ps {
		if (ps[i].Env || ps[i].EnvPrefix != "") && ps[i].EnvPrefix == "" {
			return &ps[i]
		}
	}
	return nil
}
