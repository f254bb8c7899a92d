package trust

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
)

// ReaderTTL is how long a Reader keeps what it read: long enough for the asks of one
// command's reads and first write to share a reading, short enough to add little to
// what the engine's own cache of the state (10 s) already keeps it.
const ReaderTTL = 2 * time.Second

// Reader reads the trust policy's objects once for every user of one process: the
// store's author stamp takes the token from it (Token) and the engine's trust checks
// the state (State), so that a command reads the trust state once, in one round trip
// (the three objects together), whichever asks first. A reading under way is shared by
// those who ask meanwhile; one that ended is kept for ReaderTTL, one that failed is not
// (the next call reads again). It is safe for concurrent use.
type Reader struct {
	core             kubernetes.Interface
	catalogNamespace string

	mu  sync.Mutex
	cur *reading
}

// reading is one reading of the objects: done is closed once o is set.
type reading struct {
	done chan struct{}
	o    objects
	at   time.Time
}

// NewReader returns a Reader of the trust policy of core's cluster, whose token
// ConfigMap is in catalogNamespace.
func NewReader(core kubernetes.Interface, catalogNamespace string) *Reader {
	return &Reader{core: core, catalogNamespace: catalogNamespace}
}

// read returns the reading to use: the one under way, or one younger than ReaderTTL
// that did not fail, or a new one.
func (r *Reader) read(ctx context.Context) objects {
	r.mu.Lock()
	cur := r.cur
	if cur != nil {
		select {
		case <-cur.done:
			if time.Since(cur.at) >= ReaderTTL || cur.o.failed() {
				cur = nil
			}
		default:
		}
	}
	if cur == nil {
		cur = &reading{done: make(chan struct{})}
		r.cur = cur
		r.mu.Unlock()
		cur.o = readObjects(ctx, r.core, r.catalogNamespace)
		cur.at = time.Now()
		close(cur.done)
		return cur.o
	}
	r.mu.Unlock()
	select {
	case <-cur.done:
		return cur.o
	case <-ctx.Done():
		return objects{polErr: ctx.Err(), bindingErr: ctx.Err(), tokenErr: ctx.Err()}
	}
}

// State is the trust state (CheckPolicy), read at most once per ReaderTTL.
func (r *Reader) State(ctx context.Context) (State, error) {
	return r.read(ctx).state(r.catalogNamespace)
}

// Token is the token the token ConfigMap holds as stored, for the author stamp of the
// records a user writes: "" when it is missing or may not be read, whether or not the
// policy is in force.
func (r *Reader) Token(ctx context.Context) (string, error) {
	return r.read(ctx).storedToken(r.catalogNamespace)
}

// failed reports whether a read failed for another reason than the object's absence or
// the reader's lack of permission: reading again may give another answer.
func (o objects) failed() bool {
	for _, err := range []error{o.polErr, o.bindingErr, o.tokenErr} {
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			return true
		}
	}
	return false
}
