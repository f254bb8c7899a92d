package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestFollow_TimeoutAndInterrupt: the wait every verb shares (provision, update,
// deprovision, touch, bind, unbind) ends in a *TimeoutError (exit 124) when its timeout
// runs out and in context.Canceled (exit 130) when the user interrupts it, each saying
// the operation goes on and how to follow it.
func TestFollow_TimeoutAndInterrupt(t *testing.T) {
	e := &Engine{}
	blocked := followed{
		kind: "binding",
		drive: func(ctx context.Context, _, _ string, _ DriveOptions) (Result, error) {
			<-ctx.Done()
			return Result{Message: "the broker is binding"}, ctx.Err()
		},
		release: func(context.Context, Result) {},
	}
	var timeout *TimeoutError

	t.Run("timeout", func(t *testing.T) {
		_, err := e.follow(context.Background(), blocked, "dev", "db", "bind", Follow{Wait: true, Timeout: 50 * time.Millisecond})
		assert.Assert(t, errors.As(err, &timeout), "%v", err)
		assert.Check(t, is.ErrorContains(err, `waiting for binding "db" to bind (the broker is binding): the operation goes on`))
	})
	t.Run("a request refused at the deadline", func(t *testing.T) {
		// client-go's rate limiter refuses a request that could not start before the
		// wait's deadline, with an error that wraps no context error.
		refused := blocked
		refused.drive = func(ctx context.Context, _, _ string, _ DriveOptions) (Result, error) {
			return Result{Message: "the broker is binding"},
				fmt.Errorf("cannot get service binding \"db\": client rate limiter Wait returned an error: %w",
					errors.New("rate: Wait(n=1) would exceed context deadline"))
		}
		_, err := e.follow(context.Background(), refused, "dev", "db", "bind", Follow{Wait: true, Timeout: time.Minute})
		assert.Assert(t, errors.As(err, &timeout), "%v", err)
		assert.Check(t, is.ErrorContains(err, "the operation goes on"))

		// Without a timeout, the same words are an error like any other.
		_, err = e.follow(context.Background(), refused, "dev", "db", "bind", Follow{Wait: true})
		assert.Assert(t, !errors.As(err, &timeout), "%v", err)
		assert.Assert(t, !errors.Is(err, context.Canceled), "%v", err)
	})
	t.Run("interrupt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := e.follow(ctx, blocked, "dev", "db", "bind", Follow{Wait: true, Timeout: time.Minute})
		assert.Assert(t, errors.Is(err, context.Canceled), "%v", err)
		assert.Assert(t, !errors.As(err, &timeout), "%v", err)
		assert.Check(t, is.ErrorContains(err, `interrupted: binding "db" is left pending`))
		assert.Check(t, !strings.Contains(err.Error(), context.Canceled.Error()), "no Go error text: %v", err)
	})
	t.Run("interrupt without a timeout", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := e.follow(ctx, blocked, "dev", "db", "bind", Follow{Wait: true})
		assert.Assert(t, errors.Is(err, context.Canceled), "%v", err)
	})
}
