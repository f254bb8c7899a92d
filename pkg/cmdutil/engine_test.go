package cmdutil_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// The engine of provision and the other instance verbs talks to brokers with the same
// User-Agent as register, sync broker and doctor (cmdutil.Factory.BrokerClients).
func TestEngine_BrokerSeesTheFactoryUserAgent(t *testing.T) {
	url, seen := cmdutil.UserAgentBroker(t)
	c := storetest.NewCluster()
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, nil, nil))
	f.UseClients(c.Core, c.Metadata)
	f.Getenv = func(string) string { return "" }
	e, err := f.Engine(cmdutil.EngineOptions{})
	assert.NilError(t, err)
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: "ns"}, Spec: v1alpha1.BrokerSpec{URL: url}}
	_, _ = e.Syncer.Sync(context.Background(), b)
	assert.Assert(t, len(*seen) > 0, "the broker was not called")
	for _, ua := range *seen {
		assert.Equal(t, ua, cmdutil.UserAgent())
	}
}
