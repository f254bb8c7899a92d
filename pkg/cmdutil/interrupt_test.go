package cmdutil

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// TestInterrupt covers the first and second signal of a command, with and without
// broker calls under way.
func TestInterrupt(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, in *Interrupt, out *bytes.Buffer)
	}{
		{name: "no call under way: the first signal cancels at once, the second exits", run: func(t *testing.T, ctx context.Context, in *Interrupt, out *bytes.Buffer) {
			assert.Assert(t, !in.Signal())
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
			assert.Equal(t, out.String(), "")
			assert.Assert(t, !in.BeginCall(), "nothing new starts after the signal")
			assert.Assert(t, in.Signal(), "the second signal exits at once")
		}},
		{name: "a call under way is let finish, then the context is cancelled", run: func(t *testing.T, ctx context.Context, in *Interrupt, out *bytes.Buffer) {
			assert.Assert(t, in.BeginCall())
			assert.Assert(t, !in.Signal())
			assert.NilError(t, ctx.Err(), "the call under way goes on")
			assert.Assert(t, strings.Contains(out.String(), "waiting for the broker's answer"), out.String())
			assert.Assert(t, strings.Contains(out.String(), "Ctrl-C again exits at once"), out.String())
			assert.Assert(t, !in.BeginCall(), "no other call starts")
			in.EndCall()
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		}},
		{name: "two calls under way: cancelled when the last ends", run: func(t *testing.T, ctx context.Context, in *Interrupt, out *bytes.Buffer) {
			assert.Assert(t, in.BeginCall())
			assert.Assert(t, in.BeginCall())
			assert.Assert(t, !in.Signal())
			in.EndCall()
			assert.NilError(t, ctx.Err())
			in.EndCall()
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		}},
		{name: "a second signal during the call exits at once", run: func(t *testing.T, ctx context.Context, in *Interrupt, out *bytes.Buffer) {
			assert.Assert(t, in.BeginCall())
			assert.Assert(t, !in.Signal())
			assert.Assert(t, in.Signal())
		}},
		{name: "calls without a signal change nothing", run: func(t *testing.T, ctx context.Context, in *Interrupt, out *bytes.Buffer) {
			assert.Assert(t, in.BeginCall())
			in.EndCall()
			assert.Assert(t, in.BeginCall())
			in.EndCall()
			assert.NilError(t, ctx.Err())
			assert.Equal(t, out.String(), "")
			in.Stop()
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			ctx, in := NewInterrupt(context.Background(), &out)
			defer in.Stop()
			tc.run(t, ctx, in, &out)
		})
	}
}
