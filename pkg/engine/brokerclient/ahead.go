package brokerclient

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// SecretAheadTTL is how long a Secret read ahead (ReadSecretAhead) may be taken by
// ClientFor after the read started: a verb's broker call follows its reads within
// moments, and a read older than this is not used (ClientFor reads again).
const SecretAheadTTL = 5 * time.Second

// secretsAhead are the reads of credentials Secrets a verb started before the broker
// call that needs them, in the order they were started, each taken once.
type secretsAhead struct {
	mu    sync.Mutex
	reads []*secretAhead
}

type secretAhead struct {
	read *ahead.Read[secretRead]
	at   time.Time
}

// secretRead is what a read ahead found: the Secret (key namespace/name) the broker
// names; key "" when it names none this client would read.
type secretRead struct {
	key    string
	secret *corev1.Secret
}

// ReadSecretAhead starts reading the broker record find returns and then the
// credentials Secret it names, when it names one in its own namespace (the only one
// ClientFor reads), for the next ClientFor of a broker naming the same Secret within
// SecretAheadTTL: a verb calls it as soon as it knows which broker it will call, so that
// the Secret's read goes out with the verb's other reads instead of after the broker's
// read that the call rests on. The read is registered before ReadSecretAhead returns, so
// that a ClientFor that comes before it ends waits for it instead of reading the Secret
// a second time. The Secret is read with the client's own rights and used only by
// ClientFor, which the engine calls once the broker record it reads then passed its
// checks, and only when that record names the same Secret; a read that failed is not
// used (ClientFor reads again, and fails as it did). Reconcile reads no Secret ahead.
func (f *Factory) ReadSecretAhead(ctx context.Context, find func() (*v1alpha1.Broker, error)) {
	if f.core == nil {
		return
	}
	read := ahead.StartWarm(ctx, func() (secretRead, error) {
		b, err := find()
		if err != nil || b == nil || b.Spec.Auth == nil || b.Spec.Auth.SecretRef.Name == "" {
			return secretRead{}, err
		}
		ns, name := b.Spec.Auth.SecretRef.Namespace, b.Spec.Auth.SecretRef.Name
		if ns == "" {
			ns = b.Namespace
		}
		if ns != b.Namespace {
			return secretRead{}, nil
		}
		s, err := f.core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		return secretRead{key: ns + "/" + name, secret: s}, err
	})
	if read == nil {
		return
	}
	f.secrets.mu.Lock()
	defer f.secrets.mu.Unlock()
	f.secrets.reads = append(f.secrets.young(), &secretAhead{read: read, at: time.Now()})
}

// young drops the reads older than SecretAheadTTL (and all but the last 100) and
// returns those left; the caller holds mu.
func (s *secretsAhead) young() []*secretAhead {
	kept := s.reads[:0]
	for _, r := range s.reads {
		if time.Since(r.at) < SecretAheadTTL {
			kept = append(kept, r)
		}
	}
	clear(s.reads[len(kept):])
	if n := len(kept) - 100; n > 0 {
		kept = slices.Delete(kept, 0, n)
	}
	s.reads = kept
	return kept
}

// take removes r from the reads, and reports whether it was there (a read is taken
// once).
func (s *secretsAhead) take(r *secretAhead) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.reads {
		if x == r {
			s.reads = append(s.reads[:i], s.reads[i+1:]...)
			return true
		}
	}
	return false
}

// secret reads Secret ns/name: a young read started ahead that found it and succeeded
// (taken once; reads still under way are waited for, as they may be of this Secret),
// else a read now.
func (f *Factory) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	key := ns + "/" + name
	f.secrets.mu.Lock()
	pending := slices.Clone(f.secrets.young())
	f.secrets.mu.Unlock()
	for _, r := range pending {
		got, err := r.read.Wait()
		switch {
		case got.key == "":
			f.secrets.take(r) // of no use to anyone
		case got.key != key:
			// Another broker's Secret: left for the client of that broker.
		case f.secrets.take(r) && err == nil:
			return got.secret, nil
		}
	}
	return f.core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}
