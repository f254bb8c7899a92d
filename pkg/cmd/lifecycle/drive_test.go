package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// TestDriveRecord_ExitCodes: the wait every verb shares (provision, update, deprovision,
// touch, bind, unbind) exits 124 when --timeout runs out and 130 when the user
// interrupts it, each saying the operation goes on and how to follow it.
func TestDriveRecord_ExitCodes(t *testing.T) {
	blocked := Driven{
		Kind: "binding",
		Drive: func(ctx context.Context, _, _ string, _ catalog.DriveOptions) (catalog.Result, error) {
			<-ctx.Done()
			return catalog.Result{Message: "the broker is binding"}, ctx.Err()
		},
		Release: func(context.Context, catalog.Result) {},
	}
	streams := cmdutil.NewTestIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{})

	t.Run("timeout", func(t *testing.T) {
		_, err := DriveRecord(context.Background(), streams, blocked, "dev", "db", "bind", WaitFlags{Wait: true, Timeout: 50 * time.Millisecond})
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitTimeout, "%v", err)
		assert.Check(t, is.ErrorContains(err, `waiting for binding "db" to bind (the broker is binding): the operation goes on`))
	})
	t.Run("a request refused at the deadline", func(t *testing.T) {
		// client-go's rate limiter refuses a request that could not start before the
		// wait's deadline, with an error that wraps no context error.
		refused := blocked
		refused.Drive = func(ctx context.Context, _, _ string, _ catalog.DriveOptions) (catalog.Result, error) {
			return catalog.Result{Message: "the broker is binding"},
				fmt.Errorf("cannot get service binding \"db\": client rate limiter Wait returned an error: %w",
					errors.New("rate: Wait(n=1) would exceed context deadline"))
		}
		_, err := DriveRecord(context.Background(), streams, refused, "dev", "db", "bind", WaitFlags{Wait: true, Timeout: time.Minute})
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitTimeout, "%v", err)
		assert.Check(t, is.ErrorContains(err, "the operation goes on"))

		// Without --timeout, the same words are an error like any other.
		_, err = DriveRecord(context.Background(), streams, refused, "dev", "db", "bind", WaitFlags{Wait: true})
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitError, "%v", err)
	})
	t.Run("interrupt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := DriveRecord(ctx, streams, blocked, "dev", "db", "bind", WaitFlags{Wait: true, Timeout: time.Minute})
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitInterrupted, "%v", err)
		assert.Check(t, is.ErrorContains(err, `interrupted: binding "db" is left pending`))
	})
	t.Run("interrupt without a timeout", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := DriveRecord(ctx, streams, blocked, "dev", "db", "bind", WaitFlags{Wait: true})
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitInterrupted, "%v", err)
	})
}
