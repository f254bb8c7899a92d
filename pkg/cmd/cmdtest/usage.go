package cmdtest

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// BadInvocation is a command line that must fail as a usage error before a cluster
// is needed.
type BadInvocation struct {
	// Name names the subtest; the command line does when it is empty.
	Name string
	Args []string
	// Want is a part of the error message.
	Want string
	// PflagWording: the value is refused by a flag every verb shares, worded as the
	// flag parser words it. Otherwise the parser's "invalid argument" wrapping must
	// not show.
	PflagWording bool
}

// UsageErrors runs each invocation offline, as a subtest, and checks that it fails
// with the usage exit code and the message it wants.
func UsageErrors(t *testing.T, invocations []BadInvocation) {
	t.Helper()
	for _, tc := range invocations {
		name := tc.Name
		if name == "" {
			name = strings.Join(tc.Args, " ")
		}
		t.Run(name, func(t *testing.T) {
			err := RunOffline(t, tc.Args...)
			assert.ErrorContains(t, err, tc.Want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
			if !tc.PflagWording {
				assert.Assert(t, !strings.Contains(err.Error(), "invalid argument"), "pflag's wrapping is not shown: %v", err)
			}
		})
	}
}

// Validated checks what a Validate returned: nil when want is empty, otherwise a
// usage error (exit code 2) whose message contains want.
func Validated(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		assert.NilError(t, err)
		return
	}
	assert.ErrorContains(t, err, want)
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
}
