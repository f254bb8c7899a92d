package brokerclient

import (
	"context"
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
// call that needs them, by namespace/name, each taken once.
type secretsAhead struct {
	mu    sync.Mutex
	reads map[string]secretAhead
}

type secretAhead struct {
	read *ahead.Read[*corev1.Secret]
	at   time.Time
}

// ReadSecretAhead starts reading the credentials Secret broker b names, when it names
// one in its own namespace (the only one ClientFor reads), for the next ClientFor of a
// broker naming the same Secret within SecretAheadTTL: a verb calls it as soon as it
// knows the broker, so that the Secret's read goes out with the verb's other reads
// instead of after the broker's read that the call rests on. The Secret is read with
// the client's own rights and used only by ClientFor, which the engine calls once the
// broker record it reads then passed its checks, and only when that record names the
// same Secret; a read that failed is not used (ClientFor reads again, and fails as it
// did). Reconcile reads no Secret ahead.
func (f *Factory) ReadSecretAhead(ctx context.Context, b *v1alpha1.Broker) {
	if f.core == nil || b == nil || b.Spec.Auth == nil || b.Spec.Auth.SecretRef.Name == "" {
		return
	}
	ns, name := b.Spec.Auth.SecretRef.Namespace, b.Spec.Auth.SecretRef.Name
	if ns == "" {
		ns = b.Namespace
	}
	if ns != b.Namespace {
		return
	}
	read := ahead.Start(ctx, func() (*corev1.Secret, error) {
		return f.core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	})
	f.secrets.mu.Lock()
	defer f.secrets.mu.Unlock()
	if f.secrets.reads == nil || len(f.secrets.reads) > 100 {
		f.secrets.reads = map[string]secretAhead{}
	}
	f.secrets.reads[ns+"/"+name] = secretAhead{read: read, at: time.Now()}
}

// secret reads Secret ns/name: the read started ahead when there is a young one that
// succeeded (taken once), else a read now.
func (f *Factory) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	f.secrets.mu.Lock()
	r, ok := f.secrets.reads[ns+"/"+name]
	delete(f.secrets.reads, ns+"/"+name)
	f.secrets.mu.Unlock()
	if ok && time.Since(r.at) < SecretAheadTTL {
		if s, err := r.read.Wait(); err == nil {
			return s, nil
		}
	}
	return f.core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}
