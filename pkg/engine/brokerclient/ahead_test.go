package brokerclient_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// A Secret read ahead is what the next ClientFor of a broker naming it uses, once; a
// broker naming another Secret, or a later client, reads for itself; a read that failed
// is read again (and its error is the one ClientFor gives); a Secret of another
// namespace than the broker's is never read ahead.
func TestReadSecretAhead_UsedOnceByTheBrokerNamingIt(t *testing.T) {
	ctx := context.Background()
	tb := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", BearerToken: "tok"})
	core := k8sfake.NewClientset(
		secret("team", "basic", map[string]string{"username": "u", "password": "p"}),
		secret("team", "bearer", map[string]string{"token": "tok"}),
		secret("other", "basic", map[string]string{"username": "u", "password": "p"}),
	)
	var gets atomic.Int32
	var fail atomic.Bool
	core.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		if fail.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	f := brokerclient.New(core)
	basic := brokerRecord(tb.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "basic"}})
	bearer := brokerRecord(tb.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "bearer"}})
	found := func(b *v1alpha1.Broker) func() (*v1alpha1.Broker, error) {
		return func() (*v1alpha1.Broker, error) { return b, nil }
	}
	works := func(b *v1alpha1.Broker) {
		t.Helper()
		c, err := f.ClientFor(ctx, b)
		assert.NilError(t, err)
		_, err = c.GetCatalog(ctx, nil)
		assert.NilError(t, err)
	}

	f.ReadSecretAhead(ctx, found(basic))
	works(basic)
	assert.Equal(t, gets.Load(), int32(1), "the client takes the Secret read ahead")
	works(basic)
	assert.Equal(t, gets.Load(), int32(2), "a read ahead is taken once")

	f.ReadSecretAhead(ctx, found(basic))
	works(bearer)
	works(basic)
	assert.Equal(t, gets.Load(), int32(4), "a broker naming another Secret reads its own, and leaves the read ahead to the one naming it")

	fail.Store(true)
	f.ReadSecretAhead(ctx, found(bearer))
	_, err := f.ClientFor(ctx, bearer)
	assert.ErrorContains(t, err, `broker "b1": cannot read secret "bearer" in namespace "team": connection refused`)
	assert.Equal(t, gets.Load(), int32(6), "a failed read ahead is read again")
	fail.Store(false)

	elsewhere := brokerRecord(tb.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "basic", Namespace: "other"}})
	f.ReadSecretAhead(ctx, found(elsewhere))
	_, err = f.ClientFor(ctx, elsewhere)
	assert.ErrorContains(t, err, "a broker's credentials must be in its own namespace")
	assert.Equal(t, gets.Load(), int32(6), "another namespace's Secret is not read")
}

// A client built while the broker read ahead is still under way waits for it and takes
// its Secret, instead of reading the Secret a second time.
func TestReadSecretAhead_AClientBuiltBeforeTheBrokerIsRead_WaitsForTheReadAhead(t *testing.T) {
	ctx := context.Background()
	tb := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	core := k8sfake.NewClientset(secret("team", "basic", map[string]string{"username": "u", "password": "p"}))
	var gets atomic.Int32
	core.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		return false, nil, nil
	})
	f := brokerclient.New(core)
	basic := brokerRecord(tb.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "basic"}})
	release := make(chan struct{})
	f.ReadSecretAhead(ctx, func() (*v1alpha1.Broker, error) {
		<-release
		return basic, nil
	})
	built := make(chan error, 1)
	go func() {
		c, err := f.ClientFor(ctx, basic)
		if err == nil {
			_, err = c.GetCatalog(ctx, nil)
		}
		built <- err
	}()
	select {
	case err := <-built:
		t.Fatalf("the client was built before the broker read ahead ended (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	assert.NilError(t, <-built)
	assert.Equal(t, gets.Load(), int32(1), "the Secret is read once")
}

// Many reads ahead at once (an apply of many records): the oldest beyond the last 100
// are dropped, and every client is still built.
func TestReadSecretAhead_ManyAtOnce_KeepsTheLast100(t *testing.T) {
	ctx := context.Background()
	tb := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	core := k8sfake.NewClientset(secret("team", "basic", map[string]string{"username": "u", "password": "p"}))
	f := brokerclient.New(core)
	basic := brokerRecord(tb.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "basic"}})
	for range 150 {
		f.ReadSecretAhead(ctx, func() (*v1alpha1.Broker, error) { return basic, nil })
	}
	for range 150 {
		c, err := f.ClientFor(ctx, basic)
		assert.NilError(t, err)
		_, err = c.GetCatalog(ctx, nil)
		assert.NilError(t, err)
	}
}
