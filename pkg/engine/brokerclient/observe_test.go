package brokerclient_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

type observed struct {
	broker types.NamespacedName
	code   int
	took   time.Duration
}

type recorder struct {
	mu   sync.Mutex
	seen []observed
}

func (r *recorder) observe(b types.NamespacedName, code int, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, observed{b, code, took})
}

func (r *recorder) all() []observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observed(nil), r.seen...)
}

func TestObserver_SeesEveryRequestWithItsBrokerAndStatus(t *testing.T) {
	ctx := context.Background()
	tb := broker.NewTestBroker(t, broker.Options{TLS: true})
	b := brokerRecord(tb.URL(), nil)
	b.Spec.CABundle = string(tb.CACertPEM()) // the observed transport keeps the broker's TLS settings
	ref := types.NamespacedName{Namespace: "team", Name: "b1"}

	t.Run("option", func(t *testing.T) {
		rec := &recorder{}
		c, err := brokerclient.New(k8sfake.NewClientset(), brokerclient.WithObserver(rec.observe)).ClientFor(ctx, b)
		assert.NilError(t, err)
		_, err = c.GetCatalog(ctx, nil)
		assert.NilError(t, err)
		seen := rec.all()
		assert.Equal(t, len(seen), 1)
		assert.Equal(t, seen[0].broker, ref)
		assert.Equal(t, seen[0].code, 200)
		assert.Assert(t, seen[0].took > 0)
	})

	t.Run("context", func(t *testing.T) {
		rec := &recorder{}
		f := brokerclient.New(k8sfake.NewClientset())
		c, err := f.ClientFor(ctx, b)
		assert.NilError(t, err)
		_, err = c.GetCatalog(ctx, nil)
		assert.NilError(t, err)
		assert.Equal(t, len(rec.all()), 0, "nothing observes clients built without an observer")

		c, err = f.ClientFor(brokerclient.ContextWithObserver(ctx, rec.observe), b)
		assert.NilError(t, err)
		_, err = c.GetCatalog(ctx, nil)
		assert.NilError(t, err)
		assert.Equal(t, len(rec.all()), 1)
	})

	t.Run("no answer", func(t *testing.T) {
		rec := &recorder{}
		down := brokerRecord("http://127.0.0.1:1", nil)
		c, err := brokerclient.New(k8sfake.NewClientset(), brokerclient.WithObserver(rec.observe)).ClientFor(ctx, down)
		assert.NilError(t, err)
		_, err = c.GetCatalog(ctx, nil)
		assert.Assert(t, err != nil)
		seen := rec.all()
		assert.Equal(t, len(seen), 1)
		assert.Equal(t, seen[0].code, 0)
	})
}
