package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Brokers checks that every broker registered in the current and the catalog namespace
// answers its catalog within the broker timeout, with the credentials it is registered
// with. A broker record that cannot be read is a finding of its own; the others are
// checked all the same. Brokers are checked brokerChecksAtOnce at a time, and all of
// them within BrokersBudget: whoever may write ConfigMaps in a namespace may register
// brokers that never answer, and must not hold the report up for long.
func Brokers(ctx context.Context, c *Config) []Finding {
	var fs []Finding
	var brokers []*v1alpha1.Broker
	unreadable := 0
	for _, ns := range c.namespaces() {
		list, err := c.Records.Brokers().List(ctx, ns, records.Filter{})
		if err != nil {
			bad, ok := unreadableRecords(err)
			if !ok {
				fs = append(fs, Finding{Object: "brokers " + ns, Severity: Warn, Detail: fmt.Sprintf("cannot list brokers: %v", err),
					Fix: fmt.Sprintf("ask for list permission on ConfigMaps in namespace %q", ns)})
				continue
			}
			fs = append(fs, bad...)
			unreadable += len(bad)
		}
		brokers = append(brokers, list...)
	}
	if len(brokers) == 0 && unreadable == 0 {
		return append(fs, Finding{Object: "brokers", Severity: Warn, Detail: fmt.Sprintf("no broker registered in namespace %s", strings.Join(c.namespaces(), " or ")),
			Fix: "register one: kubectl catalog register NAME --url URL"})
	}
	return append(fs, c.checkAll(ctx, brokers)...)
}

// brokerChecksAtOnce is how many brokers doctor checks at once.
const brokerChecksAtOnce = 8

// BrokersBudget is how long the broker checks take at most, all together, when the
// broker timeout is d: three rounds of checks that each run until the timeout.
func BrokersBudget(d time.Duration) time.Duration { return 3 * d }

// checkAll checks brokers, brokerChecksAtOnce at a time, within BrokersBudget; a broker
// not checked by then is a finding that says so.
func (c *Config) checkAll(ctx context.Context, brokers []*v1alpha1.Broker) []Finding {
	budget := BrokersBudget(c.BrokerTimeout)
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	fs := make([]Finding, len(brokers))
	slots := make(chan struct{}, brokerChecksAtOnce)
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				fs[i] = Finding{Object: "broker " + b.Namespace + "/" + b.Name, Severity: Warn,
					Detail: fmt.Sprintf("not checked: the broker checks ran out of time (%s, three times the broker timeout) on slower brokers", budget),
					Fix:    "check it alone: " + c.syncCommand(b)}
				return
			}
			fs[i] = Broker(ctx, c, b)
		})
	}
	wg.Wait()
	return fs
}

// unreadableRecords are the findings of a list that read every record but some it could
// not decode (err joins their errors); ok is false when err is anything else.
func unreadableRecords(err error) (fs []Finding, ok bool) {
	bad, ok := store.Unreadable(err)
	for _, se := range bad {
		fs = append(fs, Finding{Object: "record " + se.Namespace + "/" + noun(se.Kind) + "/" + se.Name, Severity: Warn,
			Detail: fmt.Sprintf("cannot read it: %v", se),
			Fix:    fmt.Sprintf("fix or delete the ConfigMap it names (kubectl edit configmap NAME -n %s); nothing uses the record until then", se.Namespace)})
	}
	return fs, ok
}

// Broker checks that broker b answers its catalog, asking the engine: a record the
// engine refuses is not called.
func Broker(ctx context.Context, c *Config, b *v1alpha1.Broker) Finding {
	f := Finding{Object: "broker " + b.Namespace + "/" + b.Name}
	ctx, cancel := context.WithTimeout(ctx, c.BrokerTimeout)
	defer cancel()
	p := c.Brokers.ProbeBroker(ctx, b)
	switch {
	case p.NotCalled != nil:
		return notCalled(f, b, p.NotCalled)
	case p.Err == nil:
		f.Severity = OK
		f.Detail = fmt.Sprintf("%s answers: %d services", b.Spec.URL, p.Services)
		if b.Spec.Auth != nil {
			f.Detail += ", authenticated (" + string(b.Spec.Auth.Type) + ")"
		}
		return f
	}
	if se := (*brokerclient.SecretError)(nil); errors.As(p.Err, &se) && apierrors.IsForbidden(se.Err) && b.Namespace == c.CatalogNamespace {
		// Users get no Secret of the catalog namespace, by design (docs/security.md):
		// the calls through a cluster broker are reconcile's, and nothing of theirs fails.
		f.Severity = Info
		f.Detail = fmt.Sprintf("not checked with your rights: its credentials (Secret %q) are for reconcile and administrators; reconcile (the installed ServiceAccount) makes the calls through it that your commands record", se.Name)
		return f
	}
	f.Severity = Fail
	f.Detail = fmt.Sprintf("%s: %v", b.Spec.URL, p.Err)
	f.Fix = fmt.Sprintf("check the broker's URL, TLS settings and credentials Secret (kubectl catalog describe broker %s), then: %s", b.Name, c.syncCommand(b))
	return f
}

// syncCommand is the command that fetches broker b's catalog again.
func (c *Config) syncCommand(b *v1alpha1.Broker) string {
	if b.Namespace != c.CatalogNamespace {
		return fmt.Sprintf("kubectl catalog sync broker %s --scope namespace -n %s", b.Name, b.Namespace)
	}
	return "kubectl catalog sync broker " + b.Name
}

// notCalled is finding f of broker b, which the engine did not call because of err.
func notCalled(f Finding, b *v1alpha1.Broker, err error) Finding {
	f.Severity = Fail
	f.Detail = "not called: " + err.Error()
	if r, ok := engine.AsRefused(err); ok {
		f.Detail = fmt.Sprintf("refused: %s: %s", r.Reason, oneLine(r.Message))
		if r.Reason == engine.ReasonRefusedAuthorUnverified {
			// Not a forgery as far as anyone can tell: nobody can tell.
			f.Severity = Warn
			f.Fix = fmt.Sprintf(`not called, since its author cannot be verified: install the trust policy ("kubectl catalog init"), or check it yourself with "kubectl catalog sync broker %s -n %s", which makes you its author: its credentials Secret then goes to its URL on your authority (it shows both and asks first)`, b.Name, b.Namespace)
			return f
		}
	}
	f.Fix = fmt.Sprintf("nothing is sent to this broker: its owner fixes what it names or registers it again with kubectl catalog, or it is deleted (kubectl catalog describe broker %s -n %s; docs/security.md)", b.Name, b.Namespace)
	return f
}
