package brokerclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestEgress_DeniesLoopbackLinkLocalUnspecifiedAndConfiguredRanges_UnlessAllowed(t *testing.T) {
	deny, err := brokerclient.ParseCIDRs([]string{"10.96.0.0/12,10.244.0.0/16", "192.0.2.10"})
	assert.NilError(t, err)
	allow, err := brokerclient.ParseCIDRs([]string{"10.96.0.53/32"})
	assert.NilError(t, err)
	rule := &brokerclient.Egress{Deny: deny, Allow: allow}
	for addr, want := range map[string]string{
		"127.0.0.1":        "loopback",
		"127.8.9.10":       "loopback",
		"::1":              "loopback",
		"::ffff:127.0.0.1": "loopback",
		"169.254.169.254":  "link-local",
		"fe80::1":          "link-local",
		"0.0.0.0":          "unspecified",
		"0.1.2.3":          "unspecified",
		"::":               "unspecified",
		"10.96.0.1":        "denied",
		"10.244.3.4":       "denied",
		"192.0.2.10":       "denied",
		"10.96.0.53":       "",
		"192.0.2.11":       "",
		"203.0.113.7":      "",
		"2001:db8::1":      "",
	} {
		err := rule.Check(netip.MustParseAddr(addr))
		if want == "" {
			assert.NilError(t, err, addr)
			continue
		}
		var ee *brokerclient.EgressError
		assert.Assert(t, errors.As(err, &ee), "%s: %v", addr, err)
		assert.Equal(t, ee.Class, want, addr)
		assert.Assert(t, !strings.Contains(err.Error(), addr), "the message names no address: %v", err)
	}
	loop, err := brokerclient.ParseCIDRs([]string{"127.0.0.0/8"})
	assert.NilError(t, err)
	assert.NilError(t, (&brokerclient.Egress{Allow: loop}).Check(netip.MustParseAddr("127.0.0.1")))
	_, err = brokerclient.ParseCIDRs([]string{"10.0.0.0/33"})
	assert.ErrorContains(t, err, `"10.0.0.0/33" is neither a CIDR`)
}

// A namespace broker on loopback is refused at dial time, before a byte is sent; a
// cluster broker of the catalog namespace is not; an allowed namespace broker is called,
// and its answer, no broker's, leaves nothing of its body in the error.
func TestWithNamespaceBrokerEgress_AppliesToNamespaceBrokersOnly_AtDialTime(t *testing.T) {
	const secret = "internal-7d1f"
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Location", "http://internal.example:8080/")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"` + secret + `","message":"` + secret + `"}`))
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	broker := func(ns string) *v1alpha1.Broker {
		return &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}, Spec: v1alpha1.BrokerSpec{URL: srv.URL}}
	}
	catalog := func(rule *brokerclient.Egress, ns string) error {
		f := brokerclient.New(k8sfake.NewClientset(), brokerclient.WithNamespaceBrokerEgress("catalog-system", rule))
		c, err := f.ClientFor(ctx, broker(ns))
		assert.NilError(t, err)
		_, err = c.GetCatalog(ctx, nil)
		return err
	}

	err := catalog(&brokerclient.Egress{}, "team")
	assert.Assert(t, brokerclient.IsEgressError(err), "%v", err)
	assert.Equal(t, hits.Load(), int32(0), "nothing reaches the server")
	assert.Assert(t, !strings.Contains(err.Error(), "127.0.0.1"), "the error names no address: %v", err)
	assert.ErrorContains(t, err, "loopback")

	err = catalog(&brokerclient.Egress{}, "catalog-system")
	assert.Assert(t, !brokerclient.IsEgressError(err), "%v", err)
	assert.Equal(t, hits.Load(), int32(1), "a cluster broker is called")
	assert.ErrorContains(t, err, secret, "a cluster broker's error says what the broker said")

	allow, err := brokerclient.ParseCIDRs([]string{"127.0.0.1"})
	assert.NilError(t, err)
	err = catalog(&brokerclient.Egress{Allow: allow}, "team")
	assert.Equal(t, hits.Load(), int32(2), "an allowed namespace broker is called")
	he, ok := osb.AsHTTPStatusError(err)
	assert.Assert(t, ok, "%v", err)
	assert.Equal(t, he.StatusCode, http.StatusInternalServerError)
	assert.Assert(t, !strings.Contains(err.Error(), secret), "no byte of a namespace broker's non-OSB answer: %v", err)
	assert.Equal(t, he.ErrorCode+he.Message+he.BodyExcerpt+he.RedirectHost, "")
}

// A namespace broker that never answers holds reconcile's client for
// NamespaceBrokerTimeout at most, however long the client's own timeout.
func TestWithNamespaceBrokerEgress_BoundsANamespaceBrokersRequests(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"services":[]}`))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	allow, err := brokerclient.ParseCIDRs([]string{"127.0.0.1"})
	assert.NilError(t, err)
	f := brokerclient.New(k8sfake.NewClientset(), brokerclient.WithTimeout(time.Hour),
		brokerclient.WithNamespaceBrokerEgress("catalog-system", &brokerclient.Egress{Allow: allow}),
		brokerclient.WithNamespaceBrokerTimeout(100*time.Millisecond))
	ctx := context.Background()
	c, err := f.ClientFor(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "tarpit"}, Spec: v1alpha1.BrokerSpec{URL: srv.URL}})
	assert.NilError(t, err)

	_, err = c.GetCatalog(ctx, nil)

	assert.Assert(t, err != nil, "the tarpit's request is cut short")
	close(release)
	c, err = f.ClientFor(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: "catalog-system", Name: "acme"}, Spec: v1alpha1.BrokerSpec{URL: srv.URL}})
	assert.NilError(t, err)
	_, err = c.GetCatalog(ctx, nil)
	assert.NilError(t, err, "a cluster broker keeps the client's timeout")
}

// The cloud metadata addresses outside link-local (Alibaba's 100.100.100.200, AWS's IPv6
// fd00:ec2::254) and NAT64's well-known prefix, through which an IPv6 address reaches
// any IPv4 one (64:ff9b::a9fe:a9fe is 169.254.169.254), are denied with no setting, and
// an administrator's allow range still lets them through.
func TestEgress_DeniesMetadataAddressesAndNAT64ByDefault(t *testing.T) {
	rule := &brokerclient.Egress{}
	for addr, want := range map[string]string{
		"100.100.100.200":        "metadata",
		"::ffff:100.100.100.200": "metadata",
		"fd00:ec2::254":          "metadata",
		"64:ff9b::a9fe:a9fe":     "nat64",
		"64:ff9b::7f00:1":        "nat64",
		"64:ff9b::cb00:7107":     "nat64",
		"100.100.100.201":        "",
		"fd00:ec2::253":          "",
		"64:ff9c::a9fe:a9fe":     "",
		"2001:db8::a9fe:a9fe":    "",
	} {
		err := rule.Check(netip.MustParseAddr(addr))
		if want == "" {
			assert.NilError(t, err, addr)
			continue
		}
		var ee *brokerclient.EgressError
		assert.Assert(t, errors.As(err, &ee), "%s: %v", addr, err)
		assert.Equal(t, ee.Class, want, addr)
		assert.Assert(t, !strings.Contains(err.Error(), addr), "the message names no address: %v", err)
	}
	allow, err := brokerclient.ParseCIDRs([]string{"64:ff9b::/96"})
	assert.NilError(t, err)
	assert.NilError(t, (&brokerclient.Egress{Allow: allow}).Check(netip.MustParseAddr("64:ff9b::cb00:7107")))
}
