package reconcile

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
)

// A namespace holds at most its share of the broker slots while another namespace has
// a step under way, and the whole of them once it is alone: a tenant whose broker holds
// every call it gets cannot take the slots the other namespaces' calls need.
func TestBrokerSlots_ShareBetweenNamespaces(t *testing.T) {
	ctx := context.Background()
	s := newBrokerSlots(4)
	for range 3 {
		s.begin("tarpit")
	}
	s.begin("victim")
	var held []func()
	for range 2 {
		release, err := s.of("tarpit").Take(ctx)
		assert.NilError(t, err)
		held = append(held, release)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	third := make(chan error, 1)
	go func() {
		release, err := s.of("tarpit").Take(waitCtx)
		if err == nil {
			defer release()
		}
		third <- err
	}()
	waiting := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.waiting)
	}
	for waiting() == 0 {
		// the third take is queued, then its grant decided, under the same lock
		select {
		case err := <-third:
			t.Fatalf("the tarpit's namespace took a third of 4 slots beside another namespace's step (%v)", err)
		default:
		}
	}
	release, err := s.of("victim").Take(ctx)
	assert.NilError(t, err, "the victim's call waits although a slot is free")
	assert.Equal(t, waiting(), 1, "the tarpit's third call was given a slot beyond its share")
	release()
	s.end("victim")
	// Alone, the tarpit's namespace may hold every slot: its third call goes.
	assert.NilError(t, <-third)
	cancel()
	for _, r := range held {
		r()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, s.used, 0)
	assert.Equal(t, len(s.held), 0)
}

// A step whose context ends while it waits for a slot gives up its place: it takes no
// slot, and the slot given back goes to the next step waiting.
func TestBrokerSlots_WaitEndsWithContext(t *testing.T) {
	ctx := context.Background()
	s := newBrokerSlots(1)
	s.begin("a")
	s.begin("a")
	release, err := s.of("a").Take(ctx)
	assert.NilError(t, err)
	waitCtx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := s.of("a").Take(waitCtx)
		gaveUp <- err
	}()
	for {
		s.mu.Lock()
		n := len(s.waiting)
		s.mu.Unlock()
		if n == 1 {
			break
		}
	}
	cancel()
	assert.ErrorIs(t, <-gaveUp, context.Canceled)
	release()
	release, err = s.of("a").Take(ctx)
	assert.NilError(t, err, "the slot was not given back")
	release()
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, s.used, 0)
	assert.Equal(t, len(s.waiting), 0)
}
