package broker

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestTLS_ServesHTTPSTrustedThroughTheCAPEM(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.TLS = true })
	assert.Assert(t, strings.HasPrefix(b.URL(), "https://127.0.0.1:"))
	pool := x509.NewCertPool()
	assert.Assert(t, pool.AppendCertsFromPEM(b.CACertPEM()))
	c.hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	t.Run("trusted by IP", func(t *testing.T) {
		c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	})
	t.Run("trusted by localhost", func(t *testing.T) {
		lc := *c
		lc.base = strings.Replace(b.URL(), "127.0.0.1", "localhost", 1)
		lc.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	})
	t.Run("refused without the CA", func(t *testing.T) {
		_, err := (&http.Client{Timeout: 5 * time.Second}).Get(b.URL() + "/v2/catalog")
		assert.ErrorContains(t, err, "certificate")
	})
	t.Run("close fault still works over TLS", func(t *testing.T) {
		// Several strikes: Go's transport retries an idempotent GET once when a
		// reused connection closes.
		mustInject(t, b, Fault{Op: OpCatalog, Action: ActionClose, Times: 3})
		defer b.ClearFaults()
		resp, err := c.send(http.MethodGet, "/v2/catalog", nil)
		if err == nil {
			resp.Body.Close()
		}
		assert.Check(t, err != nil)
	})
}

func TestTLS_PlainBroker_HasNoCA(t *testing.T) {
	b, _ := startBroker(t)
	assert.Check(t, is.Len(b.CACertPEM(), 0))
	assert.Check(t, strings.HasPrefix(b.URL(), "http://"))
}
