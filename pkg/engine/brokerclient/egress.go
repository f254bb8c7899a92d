package brokerclient

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// Egress is the rule for the addresses a client of a namespace-scoped broker may connect
// to. Such a broker's URL is chosen by whoever may write ConfigMaps in its namespace, and
// reconcile calls it from its own network position (in the cluster: the node's metadata
// service, the API server, every Service and Pod), so the rule is checked on the address
// each connection is made to, after name resolution: a name that resolves to a denied
// address, or changes what it resolves to between a check and the call, gets nothing.
//
// Loopback, link-local (the cloud metadata services), the other cloud metadata
// addresses (MetadataAddresses), NAT64's well-known prefix (through which an IPv6
// address reaches any IPv4 one) and unspecified addresses are always denied, and so is
// every range in Deny; a range in Allow is allowed even so.
type Egress struct {
	// Deny are ranges refused besides the built-in ones: the cluster's Service and Pod
	// ranges, its nodes' and the API server's addresses (reconcile detects them where
	// the cluster says them, and an administrator adds what it cannot read).
	Deny []netip.Prefix
	// Allow are ranges allowed although denied: a namespace broker an administrator
	// runs on the reconcile host, say.
	Allow []netip.Prefix
}

// thisNetwork is 0.0.0.0/8, which Linux connects to the host itself.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// MetadataAddresses are the cloud metadata services outside link-local: Alibaba Cloud's
// IPv4 one and the IPv6 one of AWS (169.254.169.254, most clouds' own, is link-local).
var MetadataAddresses = []netip.Prefix{
	netip.MustParsePrefix("100.100.100.200/32"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// NAT64 is the well-known prefix of NAT64 (RFC 6052): on a network with a NAT64
// gateway, 64:ff9b::a9fe:a9fe is 169.254.169.254, so every address in it stands for an
// IPv4 one the rule cannot see.
var NAT64 = netip.MustParsePrefix("64:ff9b::/96")

// EgressError says that a connection to a namespace-scoped broker was refused by the
// egress rule. It names the class of the address, not the address: the message ends in
// the record's status, and a tenant must not learn from it what a cluster-internal name
// resolves to.
type EgressError struct {
	// Class is "loopback", "link-local", "metadata", "nat64", "unspecified" or "denied".
	Class string
}

func (e *EgressError) Error() string {
	what := "in a denied range (the cluster's Service, Pod or node ranges, the API server's, or one an administrator denies)"
	switch e.Class {
	case "loopback", "link-local", "unspecified":
		what = "a " + e.Class + " address"
	case "metadata":
		what = "a cloud metadata address"
	case "nat64":
		what = "a NAT64 address (64:ff9b::/96)"
	}
	return "refused by reconcile's egress rule for namespace-scoped brokers: the broker's host resolves to " + what +
		" (an administrator allows a range with --namespace-broker-allow-cidr)"
}

// IsEgressError reports whether err says the egress rule refused a connection.
func IsEgressError(err error) bool {
	var ee *EgressError
	return errors.As(err, &ee)
}

// Check returns an *EgressError when the rule denies addr, else nil.
func (e *Egress) Check(addr netip.Addr) error {
	addr = addr.Unmap()
	for _, p := range e.Allow {
		if p.Contains(addr) {
			return nil
		}
	}
	switch {
	case addr.IsLoopback():
		return &EgressError{Class: "loopback"}
	case addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast():
		return &EgressError{Class: "link-local"}
	case addr.IsUnspecified() || thisNetwork.Contains(addr):
		return &EgressError{Class: "unspecified"}
	case NAT64.Contains(addr):
		return &EgressError{Class: "nat64"}
	}
	for _, p := range MetadataAddresses {
		if p.Contains(addr) {
			return &EgressError{Class: "metadata"}
		}
	}
	for _, p := range e.Deny {
		if p.Contains(addr) {
			return &EgressError{Class: "denied"}
		}
	}
	return nil
}

// Control is a net.Dialer Control function enforcing the rule on the address about to
// be connected to; an address that does not parse is refused.
func (e *Egress) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &EgressError{Class: "denied"}
	}
	return e.Check(ap.Addr())
}

// ParseCIDRs reads ranges as flags give them: CIDRs ("10.96.0.0/12") or single
// addresses ("10.0.0.1"), each a /32 or /128.
func ParseCIDRs(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if p, err := netip.ParsePrefix(s); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR (10.96.0.0/12) nor an IP address", s)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out, nil
}
