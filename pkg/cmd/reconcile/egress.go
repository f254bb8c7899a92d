package reconcile

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
)

// NamespaceBrokerAllowEnv is read when --namespace-broker-allow-cidr is not given: ranges,
// separated by commas, that namespace-scoped brokers may be called at although the
// egress rule denies them.
const NamespaceBrokerAllowEnv = "KUBECTL_CATALOG_NAMESPACE_BROKER_ALLOW_CIDR"

// EgressFlags are reconcile's egress rule for namespace-scoped brokers
// (brokerclient.Egress): whose URLs whoever may write ConfigMaps in a namespace chooses,
// and reconcile calls from its own network position.
type EgressFlags struct {
	Allow, Deny []string
	// Undetected says, after Rule, which of the cluster's ranges could not be read and
	// what an administrator gives instead.
	Undetected []string
}

// AddFlags adds --namespace-broker-allow-cidr and --namespace-broker-deny-cidr.
func (e *EgressFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringSliceVar(&e.Allow, "namespace-broker-allow-cidr", nil, "Ranges (CIDRs or addresses) namespace-scoped brokers may be called at although the egress rule denies them (env "+NamespaceBrokerAllowEnv+"). Loopback, link-local (cloud metadata) and unspecified addresses, the API server's and the --namespace-broker-deny-cidr ranges are denied, checked on the address each connection is made to.")
	fs.StringSliceVar(&e.Deny, "namespace-broker-deny-cidr", nil, "Ranges (CIDRs or addresses) namespace-scoped brokers may not be called at, besides loopback, link-local, cloud metadata, NAT64, unspecified addresses and the cluster's own ranges reconcile reads (ServiceCIDRs, nodes' podCIDRs and addresses, the API server's endpoints): the ranges it cannot read. Cluster-scoped brokers are not restricted.")
}

// Rule parses the flags into the rule, with the API server's addresses and the
// cluster's own ranges (kube.DetectClusterRanges) denied.
func (e *EgressFlags) Rule(f *cmdutil.Factory) (*brokerclient.Egress, error) {
	values := e.Allow
	if len(values) == 0 {
		values = strings.Split(os.Getenv(NamespaceBrokerAllowEnv), ",")
	}
	allow, err := brokerclient.ParseCIDRs(values)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--namespace-broker-allow-cidr: %v", err)
	}
	deny, err := brokerclient.ParseCIDRs(e.Deny)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--namespace-broker-deny-cidr: %v", err)
	}
	if cfg, err := f.RESTConfig(); err == nil {
		deny = append(deny, apiServerAddresses(cfg.Host)...)
	}
	if core, err := f.KubernetesClient(); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		found := kube.DetectClusterRanges(ctx, core)
		cancel()
		deny = append(deny, found.Prefixes...)
		e.Undetected = found.Missing
	}
	return &brokerclient.Egress{Allow: allow, Deny: deny}, nil
}

// apiServerAddresses are the addresses of the API server at host (a URL or host:port):
// itself if an address, else what its name resolves to now. A name that does not
// resolve adds nothing: --namespace-broker-deny-cidr names what this cannot find.
func apiServerAddresses(host string) []netip.Prefix {
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Prefix{netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out
}
