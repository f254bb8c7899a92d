package osb

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// A client polling many operations of one broker at once (reconcile's workers share
// one client per broker) keeps its connections for the next round of calls: the calls
// after the first round open no connection (and, over TLS, make no handshake) as long
// as no more of them are in flight than before.
func TestClient_ConcurrentCalls_ReuseTheirConnections(t *testing.T) {
	const inFlight = 16
	for _, tls := range []bool{false, true} {
		name := "http"
		if tls {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			var opened atomic.Int32
			// Each round's calls are answered once all of them have arrived: inFlight
			// connections at once.
			var mu sync.Mutex
			arrived, release := 0, make(chan struct{})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				arrived++
				ch := release
				if arrived == inFlight {
					close(release)
					arrived, release = 0, make(chan struct{})
				}
				mu.Unlock()
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
				}
				reply(http.StatusOK, `{"state":"in progress"}`)(w, nil)
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					opened.Add(1)
				}
			}
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			if tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			c := newTestClient(t, srv.URL, func(cfg *ClientConfig) {
				if tls {
					cfg.CAData = serverCAPEM(srv)
				}
			})
			for range 3 {
				var wg sync.WaitGroup
				errs := make([]error, inFlight)
				for i := range inFlight {
					wg.Go(func() {
						_, errs[i] = c.LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i"})
					})
				}
				wg.Wait()
				for _, err := range errs {
					assert.NilError(t, err)
				}
			}
			assert.Equal(t, opened.Load(), int32(inFlight), "connections opened for 3 rounds of %d calls at once", inFlight)
		})
	}
}

// Clients built one after the other with one Transports (reconcile builds a broker's
// client again every few seconds) share their connections when their TLS settings and
// dial rule are the same, and only then: a client that skips verification, trusts
// another CA or dials under a rule never gets a connection another one opened.
func TestTransports_ShareConnectionsOnlyBetweenTheSameTLSSettingsAndDialRule(t *testing.T) {
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(reply(http.StatusOK, `{"state":"in progress"}`))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := serverCAPEM(srv)
	allow := func(string, string, syscall.RawConn) error { return nil }
	shared := &Transports{}
	t.Cleanup(shared.CloseIdleConnections)
	call := func(mutate func(*ClientConfig)) {
		t.Helper()
		c := newTestClient(t, srv.URL, func(cfg *ClientConfig) { cfg.Transports = shared }, mutate)
		_, err := c.LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i"})
		assert.NilError(t, err)
	}
	withCA := func(cfg *ClientConfig) { cfg.CAData = ca }
	for i, step := range []struct {
		name   string
		mutate func(*ClientConfig)
		opened int32
	}{
		{"the first client", withCA, 1},
		{"another with the same CA", withCA, 1},
		{"one that skips verification", func(cfg *ClientConfig) { cfg.InsecureSkipVerify = true }, 2},
		{"one trusting the same CA among others", func(cfg *ClientConfig) { cfg.CAData = append(append([]byte{}, ca...), otherCAPEM(t)...) }, 3},
		{"one dialing under a rule", func(cfg *ClientConfig) { cfg.CAData, cfg.DialControl = ca, allow }, 4},
		{"another dialing under the rule", func(cfg *ClientConfig) { cfg.CAData, cfg.DialControl = ca, allow }, 4},
		{"a third with the CA alone", withCA, 4},
		// A bundle larger than a shared transport may hold is its client's alone.
		{"one with a large bundle", func(cfg *ClientConfig) { cfg.CAData = largeBundle(ca) }, 5},
		{"another with the same large bundle", func(cfg *ClientConfig) { cfg.CAData = largeBundle(ca) }, 6},
	} {
		call(step.mutate)
		assert.Equal(t, opened.Load(), step.opened, "%d: %s", i, step.name)
	}
}

// largeBundle is ca followed by comments (text outside PEM blocks, which a bundle may
// hold) up to more than maxSharedCABytes.
func largeBundle(ca []byte) []byte {
	return append(append([]byte{}, ca...), bytes.Repeat([]byte("# a comment line of a large bundle\n"), maxSharedCABytes/32)...)
}
