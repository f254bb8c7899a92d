package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

func TestExitCode(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"nil is success", nil, ExitOK},
		{"plain error", errors.New("boom"), ExitError},
		{"usage error", UsageErrorf("unknown flag --x"), ExitUsage},
		{"wrapped usage error", fmt.Errorf("provision: %w", UsageErrorf("missing --class")), ExitUsage},
		{"wait timeout", &TimeoutError{What: "timed out"}, ExitTimeout},
		{"wrapped wait timeout", fmt.Errorf("x: %w", &TimeoutError{What: "timed out"}), ExitTimeout},
		{"interrupted", fmt.Errorf("waiting: %w", context.Canceled), ExitInterrupted},
		{"silent keeps its code", &SilentError{Code: 3}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, ExitCode(tc.err), tc.want)
		})
	}
}

func TestShouldPrint_SilentErrorsAreNotPrinted(t *testing.T) {
	assert.Assert(t, ShouldPrint(errors.New("x")))
	assert.Assert(t, !ShouldPrint(&SilentError{Code: 1}))
	assert.Assert(t, !ShouldPrint(nil))
}

func TestTimeoutError_MessageCarriesTheHint(t *testing.T) {
	err := &TimeoutError{What: `instance "db" is still provisioning`, Hint: `run "kubectl catalog reconcile"`}
	assert.Equal(t, err.Error(), `instance "db" is still provisioning: run "kubectl catalog reconcile"`)
}
