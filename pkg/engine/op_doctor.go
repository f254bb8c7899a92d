package engine

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// BrokerProbe is what ProbeBroker learnt of a broker. At most one of NotCalled and Err is
// set; neither means the broker answered its catalog.
type BrokerProbe struct {
	// NotCalled is why the broker was not called: the engine refuses its record (a
	// *RefusedError, see CheckBroker), or could not check it.
	NotCalled error
	// Services is how many services the broker's catalog lists, when it answered.
	Services int
	// Err is why the catalog could not be fetched: no client for the record (its
	// credentials Secret, say), or the call failed.
	Err error
}

// ProbeBroker fetches broker b's catalog, with the credentials it is registered with, to
// tell whether the broker answers (doctor); it writes nothing. A record the engine
// refuses (CheckBroker) is not called, whoever asks: its credentials would go to a URL
// of its author's choosing. ctx bounds the check and the call.
func (e *Engine) ProbeBroker(ctx context.Context, b *v1alpha1.Broker) BrokerProbe {
	if err := e.auth.CheckBroker(ctx, b); err != nil {
		return BrokerProbe{NotCalled: err}
	}
	client, err := e.cfg.Brokers.ClientFor(ctx, b)
	if err != nil {
		return BrokerProbe{Err: err}
	}
	resp, err := client.GetCatalog(ctx, nil)
	if err != nil {
		return BrokerProbe{Err: err}
	}
	return BrokerProbe{Services: len(resp.Services)}
}
