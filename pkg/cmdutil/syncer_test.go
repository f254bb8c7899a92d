package cmdutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Every catalog fetch of the commands goes through the syncer of the engine the factory
// builds (register and sync broker through RegisterBroker and SyncBroker, reconcile and
// migrate svcat through Engine.Syncer, a plan change through the engine's catalog
// refresh), whatever its timeout: a broker the engine's trust check refuses is called by
// none of them, and the refusal is recorded in its status.
func TestEngine_NoCatalogFetchCallsABrokerTheTrustCheckRefuses(t *testing.T) {
	url, seen := cmdutil.UserAgentBroker(t)
	ctx := context.Background()
	c := storetest.NewCluster(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "auth"},
		Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}})
	c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}}}, nil
	})
	other := c.Store()
	// A record anyone who may write ConfigMaps in "dev" can forge: a cluster-scoped broker
	// outside the catalog namespace.
	_, err := other.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "rogue"},
		Spec: v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeCluster}})
	assert.NilError(t, err)
	// A namespace-scoped broker whose credentials its (unknown) author may not be allowed
	// to read: refused unless the user acts with their own rights or writes it again.
	_, err = other.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "unvouched"},
		Spec: v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeNamespace,
			Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "auth"}}}})
	assert.NilError(t, err)

	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, nil, nil))
	f.UseClients(c.Core, c.Metadata)
	f.Getenv = func(string) string { return "" }
	for _, o := range []cmdutil.EngineOptions{{}, {CatalogTimeout: 5 * time.Second}} {
		e, err := f.Engine(o)
		assert.NilError(t, err)
		read := func(name string) *v1alpha1.Broker {
			b, err := e.Store.Brokers().Get(ctx, "dev", name)
			assert.NilError(t, err)
			return b
		}
		fetches := map[string]func() error{
			"Syncer.Sync of a cluster broker outside the catalog namespace": func() error {
				_, err := e.Syncer.Sync(ctx, read("rogue"))
				return err
			},
			"Syncer.Sync with the user's own rights of a cluster broker outside the catalog namespace": func() error {
				_, err := e.Syncer.Sync(engine.WithRunnersRights(ctx), read("rogue"))
				return err
			},
			"SyncBroker of a cluster broker outside the catalog namespace": func() error {
				_, err := e.SyncBroker(ctx, engine.SyncBrokerRequest{Name: "rogue", Namespace: "dev"})
				return err
			},
			"Syncer.Sync of a namespace broker with credentials and no verified author": func() error {
				_, err := e.Syncer.Sync(ctx, read("unvouched"))
				return err
			},
		}
		for name, fetch := range fetches {
			var fe *catalogsync.FetchError
			err := fetch()
			assert.Assert(t, errors.As(err, &fe) && fe.Reason == catalogsync.ReasonRefused, "%s: %v", name, err)
			assert.Equal(t, len(*seen), 0, "%s: the broker was called", name)
		}
		for _, name := range []string{"rogue", "unvouched"} {
			b := read(name)
			assert.Assert(t, meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionRefused), "%s: %+v", name, b.Status.Conditions)
		}
	}
}
