package e2e

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	reconcilecmd "github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestEgressDetect_TheClustersOwnRangesAndMetadataAddressesAreDeniedWithNoSetting: a
// tenant who may only write ConfigMaps points namespace-scoped broker records at an
// address of the cluster's Service range (the API server's Service), at a node's Pod
// range and address, at Alibaba Cloud's and AWS's IPv6 metadata addresses and at the
// metadata service through NAT64. reconcile, with the installed ServiceAccount's token and
// no egress setting, reads the cluster's ranges itself and connects to none of them.
func TestEgressDetect_TheClustersOwnRangesAndMetadataAddressesAreDeniedWithNoSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	catNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	saKubeconfig := installReconcileWithoutTrustPolicy(t, admin, catNS, "list", "servicecidrs.networking.k8s.io")

	// A node of the cluster, with a Pod range and an address (the test control plane
	// runs no kubelet: the administrator's client writes it as one would).
	nodeName := strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))[:40]
	_, err = admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Spec: corev1.NodeSpec{PodCIDR: "10.251.7.0/24", PodCIDRs: []string{"10.251.7.0/24"}}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	// The node controller writes the node too: the address goes in on a fresh read.
	instWaitFor(t, "the node's address to be written", 30*time.Second, func() bool {
		node, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		assert.NilError(t, err)
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.77"}}
		_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err == nil
	})

	svc, err := admin.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	assert.NilError(t, err)
	serviceIP := netip.MustParseAddr(svc.Spec.ClusterIP)
	// Another address of the Service range than the API server's own.
	other := serviceIP.Next().Next().Next()
	url := func(a string) string {
		if strings.Contains(a, ":") {
			a = "[" + a + "]"
		}
		return "http://" + a + ":8080"
	}

	forge := func(name, url string) {
		cm, err := store.Encode(&v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeNamespace}})
		assert.NilError(t, err)
		cm.Labels[store.LabelPending] = "true"
		_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	brokers := map[string]string{
		"service-api":   "https://" + serviceIP.String() + ":443",
		"service-range": url(other.String()),
		"pod-range":     url("10.251.7.9"),
		"node":          url("192.0.2.77"),
		"alibaba":       url("100.100.100.200"),
		"aws-ipv6":      url("fd00:ec2::254"),
		"nat64":         url("64:ff9b::a9fe:a9fe"),
	}
	for name, u := range brokers {
		forge(name, u)
	}
	// The tests' environment allows loopback for their own brokers: not here.
	env := []string{"KUBECONFIG=" + saKubeconfig, reconcilecmd.NamespaceBrokerAllowEnv + "="}
	_, r := recRunStrict(t, ns, env, "--catalog-namespace", catNS, "--max-duration", "20s", "--interval", "200ms")
	assert.Check(t, r.ExitCode == 0 || r.ExitCode == 1, r.Stderr)
	// What reconcile may read, it reads: no note about the Service ranges, the nodes or
	// the API server's endpoints.
	for _, what := range []string{"Service ranges", "nodes' addresses", "API server's endpoints"} {
		assert.Check(t, !strings.Contains(r.Stderr, "does not deny the "+what), "%s", r.Stderr)
	}

	for name := range brokers {
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, store.ConfigMapName(v1alpha1.KindBroker, name), metav1.GetOptions{})
		assert.NilError(t, err)
		st := cm.Data[store.StatusDataKey]
		assert.Check(t, is.Contains(st, "egress rule"), "broker %s (%s): %s", name, brokers[name], st)
	}
}
