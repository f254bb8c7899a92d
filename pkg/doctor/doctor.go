// Package doctor checks that kubectl catalog can work in a cluster, and finds what is
// stuck. Each check looks at one thing (the cluster, permissions, brokers, records, the
// reconcile workloads, shard groups, the trust policy) and returns findings: what a
// finding is about, how bad it is, what is wrong and the command that fixes it. doctor
// changes nothing, and calls no broker itself: it asks the engine (Prober).
package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// Severity says how bad a finding is.
type Severity string

// Severities of findings.
const (
	OK   Severity = "OK"
	Warn Severity = "WARN"
	Fail Severity = "FAIL"
	// Info says what is as it should be but worth knowing: what the user's role leaves
	// to reconcile.
	Info Severity = "INFO"
)

// Finding is what a check found about one object.
type Finding struct {
	// Object says what the finding is about, such as "broker catalog-system/acme".
	Object   string
	Severity Severity
	// Detail says what was found: what is wrong, when the severity is not OK.
	Detail string
	// Fix says what to do when the severity is not OK.
	Fix string
}

// Failed reports whether a finding is a failure.
func Failed(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Fail })
}

// Thresholds of the record checks.
const (
	// StuckAttempts is how many failed attempts make a record worth a look.
	StuckAttempts = 3
	// StuckDeletion is how long a deletion may wait before it is reported.
	StuckDeletion = 10 * time.Minute
)

// Prober tells whether a broker answers, and whether the engine would call it at all:
// *engine.Engine is one.
type Prober interface {
	ProbeBroker(ctx context.Context, b *v1alpha1.Broker) engine.BrokerProbe
}

// Config is what the checks look at.
type Config struct {
	// Namespace is the user's namespace; CatalogNamespace holds the cluster-scoped
	// brokers. The rbac and broker checks look at both.
	Namespace, CatalogNamespace string
	// User is who the API server says the user is (the cluster check sets it); the
	// rbac check's fixes name it.
	User string
	// Server is the API server's address, shown with its version.
	Server string
	// ReconcileNamespace holds the workloads of "reconcile install"; ReconcileName, when
	// set, narrows the reconcile check to one installation or workload of that name.
	ReconcileNamespace, ReconcileName string
	// BrokerTimeout bounds the check of each broker.
	BrokerTimeout time.Duration
	// Core asks the API server: its version, who the user is, what they may do, the
	// reconcile workloads and Leases, the namespaces, the trust policy.
	Core kubernetes.Interface
	// Records reads the catalog's records.
	Records *records.Reader
	// Brokers probes the brokers: the engine.
	Brokers Prober
	// Unreachable says why the API server could not be reached, for the cluster
	// finding; nil, or "", says "cannot reach the API server SERVER: ERROR".
	Unreachable func(error) string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

func (c *Config) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// namespaces are the current and the catalog namespace, once each.
func (c *Config) namespaces() []string {
	if c.Namespace == c.CatalogNamespace || c.Namespace == "" {
		return []string{c.CatalogNamespace}
	}
	return []string{c.Namespace, c.CatalogNamespace}
}

// A Check looks at one thing and returns what it found, in the order of the report.
type Check func(ctx context.Context, c *Config) []Finding

// Checks are the checks Run makes once the cluster answers, in order. Trust comes last
// when the policy is in force, and first when it is not.
func Checks() []Check {
	return []Check{RBAC, Brokers, Records, Reconcile, ShardGroups}
}

// Run makes every check. When the cluster cannot be reached, the other checks are not
// attempted.
func Run(ctx context.Context, c Config) []Finding {
	fs, reachable := Cluster(ctx, &c)
	if !reachable {
		return fs
	}
	// Without the trust policy, the one command that installs it comes first: it is
	// what lets reconcile act on the records at all.
	trustFs := Trust(ctx, &c)
	missing := slices.ContainsFunc(trustFs, func(f Finding) bool { return f.Severity != OK })
	if missing {
		fs = append(fs, trustFs...)
	}
	for _, check := range Checks() {
		fs = append(fs, check(ctx, &c)...)
	}
	if !missing {
		fs = append(fs, trustFs...)
	}
	return fs
}

// Kubeconfig is the finding when the kubeconfig (or --context, --cluster, ...) cannot be
// loaded, detail saying why: it is then the only one.
func Kubeconfig(detail string) Finding {
	return Finding{Object: "kubeconfig", Severity: Fail, Detail: detail,
		Fix: "check the kubeconfig (kubectl config view), the contexts it has (kubectl config get-contexts) and the --kubeconfig/--context flags"}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
