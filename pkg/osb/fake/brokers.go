package fake

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Brokers gives every broker record the same Client: the broker clients of an engine
// under test (engine.BrokerClients), where one fake broker answers for all.
//
//	eng := engine.New(engine.Config{Store: st, Brokers: fake.Brokers{Client: fake.New()}, ...})
type Brokers struct {
	// Client answers for every broker.
	Client osb.Client
}

// ClientFor returns Client, whatever the broker.
func (b Brokers) ClientFor(context.Context, *v1alpha1.Broker) (osb.Client, error) {
	return b.Client, nil
}
