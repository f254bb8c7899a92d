package kube

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// APIServerEndpointSlice is the EndpointSlice, in namespace default, in which the API
// server publishes its own addresses.
const APIServerEndpointSlice = "kubernetes"

// ClusterRanges are the cluster's own ranges, as DetectClusterRanges reads them: what
// reconcile, running in the cluster, reaches that a namespace-scoped broker must not
// make it call.
type ClusterRanges struct {
	// Prefixes are the ranges found: the Service ranges (ServiceCIDRs), the nodes' Pod
	// ranges (podCIDRs) and addresses, the API server's endpoints.
	Prefixes []netip.Prefix
	// Missing says, for each kind of range that could not be read, why and what an
	// administrator gives instead (--namespace-broker-deny-cidr).
	Missing []string
}

// DetectClusterRanges reads the cluster's Service ranges (the ServiceCIDR API,
// networking.k8s.io/v1), its nodes' Pod ranges and addresses, and the API server's
// endpoints (the EndpointSlice default/kubernetes), so that the egress rule of
// namespace-scoped brokers denies them with no setting. A source that cannot be read
// (not served, forbidden, empty) is named in Missing with what to set instead; the
// others are used.
func DetectClusterRanges(ctx context.Context, core kubernetes.Interface) ClusterRanges {
	var r ClusterRanges
	missing := func(what string, err error, instead string) {
		why := "none found"
		switch {
		case apierrors.IsNotFound(err):
			why = "the API is not served"
		case apierrors.IsForbidden(err):
			why = "reconcile may not read them"
		case err != nil:
			why = err.Error()
		}
		r.Missing = append(r.Missing, fmt.Sprintf("%s (%s): give %s with --namespace-broker-deny-cidr", what, why, instead))
	}
	prefix := func(s string) {
		if p, err := netip.ParsePrefix(s); err == nil {
			r.Prefixes = append(r.Prefixes, p.Masked())
		}
	}
	addr := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil {
			a = a.Unmap()
			r.Prefixes = append(r.Prefixes, netip.PrefixFrom(a, a.BitLen()))
		}
	}

	cidrs, err := core.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	n := len(r.Prefixes)
	if err == nil {
		for _, c := range cidrs.Items {
			for _, s := range c.Spec.CIDRs {
				prefix(s)
			}
		}
	}
	if len(r.Prefixes) == n {
		missing("the Service ranges (ServiceCIDRs)", err, "the cluster's Service ranges (kube-apiserver --service-cluster-ip-range)")
	}

	nodes, err := core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	n = len(r.Prefixes)
	if err == nil {
		for _, node := range nodes.Items {
			for _, s := range append(slices.Clone(node.Spec.PodCIDRs), node.Spec.PodCIDR) {
				prefix(s)
			}
		}
	}
	if len(r.Prefixes) == n {
		missing("the Pod ranges (nodes' podCIDRs)", err, "the cluster's Pod ranges (the CNI's or kube-controller-manager --cluster-cidr)")
	}
	n = len(r.Prefixes)
	if err == nil {
		for _, node := range nodes.Items {
			for _, a := range node.Status.Addresses {
				if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
					addr(a.Address)
				}
			}
		}
	}
	if len(r.Prefixes) == n {
		missing("the nodes' addresses", err, "the nodes' range")
	}

	slice, err := core.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Get(ctx, APIServerEndpointSlice, metav1.GetOptions{})
	n = len(r.Prefixes)
	if err == nil {
		for _, ep := range slice.Endpoints {
			for _, a := range ep.Addresses {
				addr(a)
			}
		}
	}
	if len(r.Prefixes) == n {
		missing("the API server's endpoints (EndpointSlice default/kubernetes)", err, "the API server's addresses")
	}
	slices.SortFunc(r.Prefixes, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	r.Prefixes = slices.Compact(r.Prefixes)
	return r
}
