package install

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// MetadataCIDRs are the cloud metadata addresses the NetworkPolicy of reconcile's pods
// keeps them from: the link-local IPv4 one most clouds serve, Alibaba Cloud's, the IPv6
// one of AWS, and NAT64's well-known prefix, through which an IPv6 address reaches any
// IPv4 one (64:ff9b::a9fe:a9fe is 169.254.169.254). The IPv4 ones first.
var MetadataCIDRs = []string{"169.254.169.254/32", "100.100.100.200/32", "fd00:ec2::254/128", "64:ff9b::/96"}

// metadataCIDRs are those of MetadataCIDRs of one family: IPv6 or IPv4.
func metadataCIDRs(v6 bool) []string {
	var out []string
	for _, c := range MetadataCIDRs {
		if strings.Contains(c, ":") == v6 {
			out = append(out, c)
		}
	}
	return out
}

// networkPolicy is the NetworkPolicy of the installation's pods: egress to DNS, to the
// cluster's pods, and to every address but the cloud metadata service. It is the
// network's half of reconcile's egress rule, whose finer half (loopback, link-local,
// the API server, the ranges an administrator denies, for namespace-scoped brokers only)
// reconcile enforces itself at dial time; a CNI without NetworkPolicy support ignores
// it, and the dial-time rule holds alone.
func networkPolicy(o Options) *networkingv1.NetworkPolicy {
	meta := metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: Labels()}
	meta.Labels[LabelInstallation] = o.Name
	dns := func(p corev1.Protocol) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(p), Port: ptr.To(intstr.FromInt32(53))}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				LabelName: "kubectl-catalog", LabelComponent: "reconcile", LabelManagedBy: "kubectl-catalog"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{Ports: []networkingv1.NetworkPolicyPort{dns(corev1.ProtocolUDP), dns(corev1.ProtocolTCP)}},
				{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}},
				{To: []networkingv1.NetworkPolicyPeer{
					{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: metadataCIDRs(false)}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: metadataCIDRs(true)}},
				}},
			},
		},
	}
}

// egressArgs are reconcile's egress flags for namespace-scoped brokers, as given.
func (o Options) egressArgs() []string {
	var args []string
	if len(o.NamespaceBrokerAllowCIDRs) > 0 {
		args = append(args, "--namespace-broker-allow-cidr", strings.Join(o.NamespaceBrokerAllowCIDRs, ","))
	}
	if len(o.NamespaceBrokerDenyCIDRs) > 0 {
		args = append(args, "--namespace-broker-deny-cidr", strings.Join(o.NamespaceBrokerDenyCIDRs, ","))
	}
	return args
}

// validateCIDRs checks the values of flag: CIDRs or addresses.
func validateCIDRs(flag string, values []string) error {
	for _, v := range values {
		if _, err := netip.ParsePrefix(v); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(v); err != nil {
			return fmt.Errorf("%s %q is neither a CIDR (10.96.0.0/12) nor an IP address", flag, v)
		}
	}
	return nil
}
