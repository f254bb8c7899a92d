package ahead

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
)

func TestStart_WithoutSchedule_ReadsInItsOwnGoroutine(t *testing.T) {
	release := make(chan struct{})
	r := Start(context.Background(), func() (int, error) {
		<-release // would block the caller forever if it ran in the caller's goroutine
		return 7, nil
	})
	close(release)
	v, err := r.Wait()
	assert.NilError(t, err)
	assert.Equal(t, v, 7)
	v, _ = r.Wait()
	assert.Equal(t, v, 7, "a second Wait gives the same result")
}

func TestStart_Schedule_ReadsAtStartOrAtTheFirstWait(t *testing.T) {
	for _, now := range []bool{true, false} {
		ctx := WithSchedule(context.Background(), func() bool { return now })
		runs := 0
		boom := errors.New("boom")
		r := Start(ctx, func() (string, error) { runs++; return "v", boom })
		if now {
			assert.Equal(t, runs, 1, "the schedule said: at once")
		} else {
			assert.Equal(t, runs, 0, "the schedule said: at the first wait")
		}
		for range 2 {
			v, err := r.Wait()
			assert.Equal(t, v, "v")
			assert.ErrorIs(t, err, boom)
		}
		assert.Equal(t, runs, 1, "a read runs once")
	}
}

func TestGo_Schedule_RunsAtOnceOrNotAtAll(t *testing.T) {
	for _, now := range []bool{true, false} {
		runs := 0
		Go(WithSchedule(context.Background(), func() bool { return now }), func() { runs++ }, func() { runs++ })
		if now {
			assert.Equal(t, runs, 2)
		} else {
			assert.Equal(t, runs, 0)
		}
	}
}

func TestDone_IsKnown(t *testing.T) {
	v, err := Done(3, nil).Wait()
	assert.NilError(t, err)
	assert.Equal(t, v, 3)
}

func TestStartWarm_Schedule_RunsAtOnceOrNotAtAll(t *testing.T) {
	var ran int
	read := func() (int, error) { ran++; return ran, nil }
	now := WithSchedule(context.Background(), func() bool { return true })
	r := StartWarm(now, read)
	if ran != 1 {
		t.Fatalf("a read the schedule runs at once ran %d times at its start", ran)
	}
	if v, err := r.Wait(); v != 1 || err != nil {
		t.Fatalf("Wait = %d, %v", v, err)
	}
	never := WithSchedule(context.Background(), func() bool { return false })
	if r := StartWarm(never, read); r != nil || ran != 1 {
		t.Fatalf("a read the schedule defers is not started: got %v, ran %d", r, ran)
	}
	r = StartWarm(context.Background(), read)
	if v, err := r.Wait(); v != 2 || err != nil {
		t.Fatalf("without a schedule: Wait = %d, %v", v, err)
	}
}
