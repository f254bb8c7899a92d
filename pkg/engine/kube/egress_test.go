package kube

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func clusterObjects() []runtime.Object {
	return []runtime.Object{
		&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12", "fd00:10:96::/112"}}},
		&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "more"},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.100.0.0/16"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Spec:   corev1.NodeSpec{PodCIDR: "10.244.0.0/24", PodCIDRs: []string{"10.244.0.0/24", "fd00:10:244::/64"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}, {Type: corev1.NodeHostName, Address: "n1"}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"},
			Spec:   corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.20"}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.168.1.2"}}, {Addresses: []string{"192.168.1.3"}}}},
	}
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// The cluster's Service ranges, its nodes' Pod ranges and addresses, and the API
// server's endpoints are read; what cannot be read is named with what to set instead.
func TestDetectClusterRanges_ReadsServicePodNodeAndAPIServerRanges_NamesWhatItCannot(t *testing.T) {
	forbidden := func(resource string) func(clienttesting.Action) (bool, runtime.Object, error) {
		return func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("no"))
		}
	}
	notServed := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}, "")
	}
	all := prefixes("10.96.0.0/12", "10.100.0.0/16", "10.244.0.0/24", "10.244.1.0/24", "192.168.1.2/32", "192.168.1.3/32",
		"192.168.1.10/32", "203.0.113.20/32", "fd00:10:96::/112", "fd00:10:244::/64")
	for _, tc := range []struct {
		name     string
		verb     string
		resource string
		react    func(clienttesting.Action) (bool, runtime.Object, error)
		absent   []string
		missing  []string
	}{
		{name: "everything readable"},
		{name: "ServiceCIDR API not served", verb: "list", resource: "servicecidrs", react: notServed,
			absent: []string{"10.96.0.0/12", "10.100.0.0/16", "fd00:10:96::/112"}, missing: []string{"Service ranges (ServiceCIDRs) (the API is not served): give the cluster's Service ranges"}},
		{name: "nodes forbidden", verb: "list", resource: "nodes", react: forbidden("nodes"),
			absent:  []string{"10.244.0.0/24", "10.244.1.0/24", "fd00:10:244::/64", "192.168.1.10/32", "203.0.113.20/32"},
			missing: []string{"Pod ranges (nodes' podCIDRs) (reconcile may not read them)", "nodes' addresses (reconcile may not read them)"}},
		{name: "API server's endpoints forbidden", verb: "get", resource: "endpointslices", react: forbidden("endpointslices"),
			absent: []string{"192.168.1.2/32", "192.168.1.3/32"}, missing: []string{"API server's endpoints (EndpointSlice default/kubernetes) (reconcile may not read them): give the API server's addresses"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := k8sfake.NewClientset(clusterObjects()...)
			if tc.react != nil {
				cs.PrependReactor(tc.verb, tc.resource, tc.react)
			}
			r := DetectClusterRanges(context.Background(), cs)
			var want []netip.Prefix
			for _, p := range all {
				if !is.Contains(tc.absent, p.String())().Success() {
					want = append(want, p)
				}
			}
			assert.DeepEqual(t, r.Prefixes, sortPrefixes(want), cmpPrefixes)
			assert.Equal(t, len(r.Missing), len(tc.missing), "%q", r.Missing)
			for i, m := range tc.missing {
				assert.Check(t, is.Contains(r.Missing[i], m))
				assert.Check(t, is.Contains(r.Missing[i], "--namespace-broker-deny-cidr"))
			}
		})
	}
}

// A cluster whose CNI allocates Pod addresses itself (no node has a podCIDR) says so.
func TestDetectClusterRanges_NoPodCIDRs_SaysToGiveThePodRanges(t *testing.T) {
	cs := k8sfake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}}}})
	r := DetectClusterRanges(context.Background(), cs)
	assert.Assert(t, is.Contains(strings.Join(r.Missing, "\n"), "Pod ranges (nodes' podCIDRs) (none found): give the cluster's Pod ranges"))
	assert.DeepEqual(t, r.Prefixes, prefixes("192.168.1.10/32"), cmpPrefixes)
}

var cmpPrefixes = gocmp.Comparer(func(a, b netip.Prefix) bool { return a == b })

func sortPrefixes(p []netip.Prefix) []netip.Prefix {
	slices.SortFunc(p, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return p
}
