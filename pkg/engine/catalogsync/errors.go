package catalogsync

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Reasons a catalog fetch fails, as recorded in the broker's Failed condition.
const (
	ReasonCredentials  = "CredentialsUnavailable"
	ReasonUnauthorized = "Unauthorized"
	ReasonBrokerError  = "BrokerError"
	ReasonUnreachable  = "Unreachable"
	ReasonTimeout      = "Timeout"
	ReasonMalformed    = "MalformedCatalog"
	ReasonTooLarge     = "CatalogTooLarge"
	ReasonInvalid      = "InvalidCatalog"
	ReasonClientConfig = "InvalidConfiguration"
	ReasonStoreError   = "StoreError"
	// ReasonRefused: the broker record is not to be trusted (see WithBrokerCheck); its
	// Refused condition says why, and nothing is sent to it.
	ReasonRefused = "Refused"
)

// FetchError is a failure to get a usable catalog from a broker. Nothing was changed in
// the broker's classes when Sync returns it.
type FetchError struct {
	Broker string
	URL    string
	// Reason is one of the Reason constants.
	Reason string
	Err    error
}

func (e *FetchError) Error() string {
	var hint string
	switch e.Reason {
	case ReasonCredentials, ReasonClientConfig, ReasonRefused:
		return e.Err.Error()
	case ReasonUnauthorized:
		hint = "check the credentials in the broker's Secret (register it again with --basic-auth-secret or --bearer-token-secret)"
	case ReasonBrokerError:
		hint = fmt.Sprintf("the broker is failing: try again later with \"kubectl catalog sync broker %s\"", e.Broker)
	case ReasonUnreachable:
		hint = "check the URL and that the broker is running and reachable from here"
		var te *osb.TransportError
		if errors.As(e.Err, &te) && isCertError(te.Err) {
			hint = "the broker's TLS certificate is not trusted: pass its CA with --ca-file"
		}
	case ReasonTimeout:
		hint = "the broker did not answer in time: check that it is running, then try again"
	case ReasonMalformed:
		hint = "the broker answered with a catalog that is not valid JSON: fix the broker"
	case ReasonTooLarge:
		hint = "the broker's catalog exceeds the size limit: restrict it or fix the broker"
	case ReasonInvalid:
		hint = "fix the broker's catalog; the classes recorded before are kept"
	case ReasonStoreError:
		hint = fmt.Sprintf("try again with \"kubectl catalog sync broker %s\"", e.Broker)
		if store.IsTooLarge(e.Err) {
			hint = fmt.Sprintf("a class of broker %q has more plans and schemas than one record holds, even compressed: "+
				"register the broker again with --plan-restrictions that offer fewer of that class's plans, "+
				"or have the broker split the service", e.Broker)
		}
	default:
		hint = fmt.Sprintf("try again with \"kubectl catalog sync broker %s\"", e.Broker)
	}
	return fmt.Sprintf("cannot fetch the catalog of broker %q (%s): %v: %s", e.Broker, e.URL, e.Err, hint)
}

func (e *FetchError) Unwrap() error { return e.Err }

func isCertError(err error) bool {
	return err != nil && containsAny(err.Error(), "x509:", "certificate")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// classifyFetch turns a client or fetch error into a FetchError.
func classifyFetch(b *v1alpha1.Broker, err error) *FetchError {
	fe := &FetchError{Broker: b.Name, URL: b.Spec.URL, Err: err, Reason: ReasonUnreachable}
	var mre *osb.MalformedResponseError
	var tle *osb.BodyTooLargeError
	var lim *LimitError
	switch {
	case errors.As(err, &lim):
		fe.Reason = ReasonTooLarge
	case brokerclient.IsSecretError(err):
		fe.Reason = ReasonCredentials
	case errors.As(err, &tle):
		fe.Reason = ReasonTooLarge
	case errors.As(err, &mre):
		fe.Reason = ReasonMalformed
	case osb.IsUnauthorizedError(err) || osb.StatusCode(err) == 403:
		fe.Reason = ReasonUnauthorized
	case osb.StatusCode(err) != 0:
		fe.Reason = ReasonBrokerError
	case osb.IsTimeout(err):
		fe.Reason = ReasonTimeout
	}
	return fe
}
