package brokerclient

import (
	"context"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Observer is told of every HTTP request a client of the Factory sends to a broker:
// the broker record's namespace and name, the response's status code (0 when no response
// came: refused or reset connection, TLS failure, timeout, cancellation) and how long
// the broker took to answer, up to the response's headers. It is called on the
// request's goroutine and must be safe for concurrent use.
type Observer func(broker types.NamespacedName, code int, took time.Duration)

// WithObserver observes every request of the clients built (metrics, tracing).
func WithObserver(o Observer) Option {
	return func(f *Factory) { f.observer = o }
}

type observerKey struct{}

// ContextWithObserver returns a context under which Factory.ClientFor builds clients
// observed by o, when the Factory has no observer of its own (WithObserver). It lets
// a long-running caller observe the clients that code it does not construct builds
// for it, such as the engine's, without observing every other user of the Factory.
func ContextWithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// observe returns the transport wrapper of clients built for b under ctx, or nil when
// nothing observes them.
func (f *Factory) observe(ctx context.Context, b *v1alpha1.Broker) func(http.RoundTripper) http.RoundTripper {
	o := f.observer
	if o == nil && ctx != nil {
		o, _ = ctx.Value(observerKey{}).(Observer)
	}
	if o == nil {
		return nil
	}
	ref := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	return func(next http.RoundTripper) http.RoundTripper {
		if next == nil {
			next = http.DefaultTransport
		}
		return &observedTransport{next: next, broker: ref, observe: o}
	}
}

// observedTransport times each round trip and reports it to observe.
type observedTransport struct {
	next    http.RoundTripper
	broker  types.NamespacedName
	observe Observer
}

func (t *observedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	code := 0
	if err == nil && resp != nil {
		code = resp.StatusCode
	}
	t.observe(t.broker, code, time.Since(start))
	return resp, err
}

// CloseIdleConnections passes the call on, so that http.Client.CloseIdleConnections
// still reaches the transport underneath.
func (t *observedTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
