package osb

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func serverCAPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func newTLSBroker(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(reply(http.StatusOK, `{"services":[]}`))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// otherCAPEM is a freshly generated CA that signed nothing the server uses.
// (Every httptest TLS server shares one certificate, so a second server
// would not do.)
func otherCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	assert.NilError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestTLS_CustomCAIsTrusted(t *testing.T) {
	srv := newTLSBroker(t)
	c := newTestClient(t, srv.URL, func(cfg *ClientConfig) { cfg.CAData = serverCAPEM(srv) })

	_, err := c.GetCatalog(t.Context(), nil)

	assert.NilError(t, err)
}

func TestTLS_UnknownCAIsRefused(t *testing.T) {
	srv := newTLSBroker(t)
	for name, ca := range map[string][]byte{"no CA": nil, "someone else's CA": otherCAPEM(t)} {
		t.Run(name, func(t *testing.T) {
			c := newTestClient(t, srv.URL, func(cfg *ClientConfig) { cfg.CAData = ca })
			_, err := c.GetCatalog(t.Context(), nil)
			assert.Assert(t, IsNoAnswer(err), "got %v", err)
			assert.Assert(t, !IsTimeout(err))
			assert.ErrorContains(t, err, "certificate")
		})
	}
}

func TestTLS_UnknownCAIsAcceptedOnlyWhenInsecure(t *testing.T) {
	srv := newTLSBroker(t)
	c := newTestClient(t, srv.URL, func(cfg *ClientConfig) { cfg.InsecureSkipVerify = true })

	_, err := c.GetCatalog(t.Context(), nil)

	assert.NilError(t, err)
}

func TestSizeCap_CatalogOverTheCapIsAnErrorNotATruncation(t *testing.T) {
	body := `{"services":[],"pad":"` + strings.Repeat("x", 2000) + `"}`
	b := newFakeBroker(t, reply(http.StatusOK, body))
	c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.MaxCatalogBytes = int64(len(body)) - 1 })

	_, err := c.GetCatalog(t.Context(), nil)

	var tooLarge *BodyTooLargeError
	assert.Assert(t, errors.As(err, &tooLarge), "got %v", err)
	assert.Equal(t, tooLarge.Limit, int64(len(body))-1)
	assert.Assert(t, IsMalformedResponseError(err))
	assert.ErrorContains(t, err, "exceeds the limit")

	c = newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.MaxCatalogBytes = int64(len(body)) })
	_, err = c.GetCatalog(t.Context(), nil)
	assert.NilError(t, err, "a body of exactly the cap is fine")
}

func TestSizeCap_OtherAnswersUseTheirOwnCap(t *testing.T) {
	body := `{"credentials":{"k":"` + strings.Repeat("x", 200) + `"}}`
	b := newFakeBroker(t, reply(http.StatusCreated, body))
	c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.MaxResponseBytes, cfg.MaxCatalogBytes = 100, 1<<20 })

	_, err := c.Bind(t.Context(), &BindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})

	var tooLarge *BodyTooLargeError
	assert.Assert(t, errors.As(err, &tooLarge), "got %v", err)
	assert.Equal(t, StatusCode(err), http.StatusCreated)
	assert.Assert(t, Decide(OpBind, OutcomeOf(0, err)).OrphanMitigation, "a 201 nobody could read needs mitigation")
}

func TestSizeCap_OversizedErrorBodyKeepsTheStatusButNotTheFields(t *testing.T) {
	body := `{"error":"ConcurrencyError","description":"` + strings.Repeat("x", 200) + `"}`
	b := newFakeBroker(t, reply(http.StatusUnprocessableEntity, body))
	c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.MaxResponseBytes = 100 })

	_, err := c.Unbind(t.Context(), &UnbindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})

	assert.Equal(t, StatusCode(err), http.StatusUnprocessableEntity)
	assert.Assert(t, !IsConcurrencyError(err), "a body that was not read completely is not trusted")
}

func TestSizeCap_EndlessBodyReturnsPromptly(t *testing.T) {
	b := newFakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat(" ", 64<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	c := newTestClient(t, b.URL) // default caps

	start := time.Now()
	_, err := c.GetInstance(t.Context(), &GetInstanceRequest{InstanceID: "i"})

	var tooLarge *BodyTooLargeError
	assert.Assert(t, errors.As(err, &tooLarge), "got %v", err)
	assert.Equal(t, tooLarge.Limit, DefaultMaxResponseBytes)
	assert.Assert(t, time.Since(start) < 10*time.Second)
}

func TestRedirect_ToAnotherHostIsNotFollowedAndCarriesNoCredentials(t *testing.T) {
	other := newFakeBroker(t, reply(http.StatusOK, `{"services":[]}`))
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			origin := newFakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.Path, status)
			})
			c := newTestClient(t, origin.URL, func(cfg *ClientConfig) { cfg.BearerToken, cfg.BasicAuth = "tok-secret", nil })

			_, err := c.Provision(t.Context(), &ProvisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "sp", Parameters: []byte(`{"password":"p"}`)})

			for _, r := range other.requests() {
				assert.Equal(t, r.Header.Get("Authorization"), "", "credentials forwarded to another host")
			}
			assert.Equal(t, len(other.requests()), 0, "the request body must not reach another host either")
			he, ok := AsHTTPStatusError(err)
			assert.Assert(t, ok, "got %v", err)
			assert.Equal(t, he.StatusCode, status)
			otherURL, _ := url.Parse(other.URL)
			assert.Equal(t, he.RedirectHost, otherURL.Host)
			assert.ErrorContains(t, err, "not followed")
			assert.Assert(t, !strings.Contains(err.Error(), "tok-secret"))
		})
	}
}

func TestRedirect_WithinTheBrokerIsFollowedWithCredentials(t *testing.T) {
	b := newFakeBroker(t, nil)
	b.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old/v2/catalog" {
			http.Redirect(w, r, "/new/v2/catalog", http.StatusTemporaryRedirect)
			return
		}
		reply(http.StatusOK, `{"services":[]}`)(w, r)
	}
	c := newTestClient(t, b.URL+"/old")

	_, err := c.GetCatalog(t.Context(), nil)

	assert.NilError(t, err)
	reqs := b.requests()
	assert.Equal(t, len(reqs), 2)
	assert.Equal(t, reqs[1].RawPath, "/new/v2/catalog")
	assert.Assert(t, reqs[1].Header.Get("Authorization") != "")
	assert.Equal(t, reqs[1].Header.Get(HeaderAPIVersion), APIVersion)
}

// TestRedirect_OfAMutatingCallIsNeverFollowed: net/http turns a 301, 302 or
// 303 of a DELETE, PUT or PATCH into a GET; a GET that answers 200 (here the
// catalog) would then read as the call's success while the broker still holds
// the resource. A 307 or 308 would re-send the body elsewhere. So no redirect
// of a mutating call is followed, even within the broker's origin.
func TestRedirect_OfAMutatingCallIsNeverFollowed(t *testing.T) {
	calls := []struct {
		op   Operation
		call func(Client) error
	}{
		{OpProvision, func(c Client) error {
			_, err := c.Provision(t.Context(), &ProvisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "sp"})
			return err
		}},
		{OpUpdate, func(c Client) error {
			_, err := c.Update(t.Context(), &UpdateRequest{InstanceID: "i", ServiceID: "s"})
			return err
		}},
		{OpDeprovision, func(c Client) error {
			_, err := c.Deprovision(t.Context(), &DeprovisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p"})
			return err
		}},
		{OpBind, func(c Client) error {
			_, err := c.Bind(t.Context(), &BindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})
			return err
		}},
		{OpUnbind, func(c Client) error {
			_, err := c.Unbind(t.Context(), &UnbindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})
			return err
		}},
	}
	statuses := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}
	for _, tc := range calls {
		for _, status := range statuses {
			t.Run(tc.op.String()+"/"+http.StatusText(status), func(t *testing.T) {
				b := newFakeBroker(t, nil)
				b.handler = func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/v2/catalog" {
						reply(http.StatusOK, `{"services":[]}`)(w, r)
						return
					}
					http.Redirect(w, r, b.URL+"/v2/catalog", status)
				}
				c := newTestClient(t, b.URL)

				err := tc.call(c)

				assert.Equal(t, len(b.requests()), 1, "the redirect was followed")
				assert.Equal(t, StatusCode(err), status, "got %v", err)
				assert.ErrorContains(t, err, "not followed")
				a := Decide(tc.op, OutcomeOf(0, err))
				assert.Equal(t, a.Result, ResultFailed)
				assert.Assert(t, a.Retry)
				assert.Equal(t, a.OrphanMitigation, tc.op != OpUpdate, "handled like a 5xx")
			})
		}
	}
}

// TestRedirect_OfAFetchLeavingTheOriginIsNotFollowed: net/http itself keeps
// Authorization on a redirect to the same host name on another port (it
// compares names, not ports), so the client's own same-origin rule is what
// keeps the credentials with the broker.
func TestRedirect_OfAFetchLeavingTheOriginIsNotFollowed(t *testing.T) {
	other := newFakeBroker(t, reply(http.StatusOK, `{"services":[]}`))
	origin := newFakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	})

	// What net/http alone would do: follow, with the credentials.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, origin.URL+"/v2/catalog", nil)
	assert.NilError(t, err)
	req.Header.Set("Authorization", "Bearer plain-client")
	resp, err := http.DefaultClient.Do(req)
	assert.NilError(t, err)
	resp.Body.Close()
	assert.Equal(t, other.last(t).Header.Get("Authorization"), "Bearer plain-client")
	before := len(other.requests())

	c := newTestClient(t, origin.URL)
	fetches := map[string]func() error{
		"catalog": func() error { _, err := c.GetCatalog(t.Context(), nil); return err },
		"instance": func() error {
			_, err := c.GetInstance(t.Context(), &GetInstanceRequest{InstanceID: "i"})
			return err
		},
		"binding": func() error {
			_, err := c.GetBinding(t.Context(), &GetBindingRequest{InstanceID: "i", BindingID: "b"})
			return err
		},
		"last operation": func() error {
			_, err := c.LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i"})
			return err
		},
		"binding last operation": func() error {
			_, err := c.BindingLastOperation(t.Context(), &BindingLastOperationRequest{InstanceID: "i", BindingID: "b"})
			return err
		},
	}
	for name, fetch := range fetches {
		t.Run(name, func(t *testing.T) {
			err := fetch()

			assert.Equal(t, StatusCode(err), http.StatusFound, "got %v", err)
			assert.ErrorContains(t, err, "not followed")
			assert.Equal(t, len(other.requests()), before, "another origin was asked")
		})
	}
}

// newHangingBroker never answers until the test ends.
func newHangingBroker(t *testing.T) *fakeBroker {
	done := make(chan struct{})
	b := newFakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	t.Cleanup(func() { close(done) }) // runs before the server closes
	return b
}

// silentAfterStatus is a broker that sends its status line, 200, and then nothing:
// reading the body waits until the request's context ends. It answers at once, in
// memory, so that the client's Timeout always runs out while it reads the body,
// however slowly a busy machine runs the test (over a socket, the status line could
// come after the Timeout).
type silentAfterStatus struct{}

func (silentAfterStatus) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: silentBody{req.Context()}, Request: req,
	}, nil
}

type silentBody struct{ ctx context.Context }

func (b silentBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (silentBody) Close() error { return nil }

func TestHangingBroker_ClientTimeoutReturnsPromptlyAsTimeout(t *testing.T) {
	for _, headerFirst := range []bool{false, true} {
		name := "no answer"
		if headerFirst {
			name = "status line then silence"
		}
		t.Run(name, func(t *testing.T) {
			url := "https://broker.example"
			var transport http.RoundTripper = silentAfterStatus{}
			if !headerFirst {
				url, transport = newHangingBroker(t).URL, nil
			}
			c := newTestClient(t, url, func(cfg *ClientConfig) {
				cfg.Timeout = 100 * time.Millisecond
				cfg.Transport = transport
			})

			start := time.Now()
			_, err := c.LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i"})

			assert.Assert(t, time.Since(start) < 5*time.Second)
			assert.Assert(t, IsTimeout(err), "got %v", err)
			assert.Assert(t, IsNoAnswer(err))
			assert.Assert(t, errors.Is(err, context.DeadlineExceeded))
			var te *TransportError
			assert.Assert(t, errors.As(err, &te))
			assert.Assert(t, te.Timeout && !te.Canceled)
			if headerFirst {
				assert.Equal(t, te.StatusCode, http.StatusOK)
			}
			assert.ErrorContains(t, err, "GET /v2/service_instances/i/last_operation")
		})
	}
}

func TestHangingBroker_CallerCancellationReturnsPromptlyAsTimeout(t *testing.T) {
	b := newHangingBroker(t)
	c := newTestClient(t, b.URL)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)

	start := time.Now()
	_, err := c.Provision(ctx, &ProvisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "sp"})

	assert.Assert(t, time.Since(start) < 5*time.Second)
	assert.Assert(t, IsTimeout(err), "got %v", err)
	assert.Assert(t, errors.Is(err, context.Canceled))
	var te *TransportError
	assert.Assert(t, errors.As(err, &te))
	assert.Assert(t, te.Canceled)
	assert.Assert(t, Decide(OpProvision, OutcomeOf(0, err)).OrphanMitigation, "the broker may have provisioned")
}

func TestHangingBroker_CallerDeadlineReturnsPromptlyAsTimeout(t *testing.T) {
	b := newHangingBroker(t)
	c := newTestClient(t, b.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()

	start := time.Now()
	_, err := c.Bind(ctx, &BindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})

	assert.Assert(t, time.Since(start) < 5*time.Second)
	assert.Assert(t, IsTimeout(err), "got %v", err)
}

func TestConnectionRefused_IsNoAnswerButNotATimeout(t *testing.T) {
	b := newFakeBroker(t, nil)
	url := b.URL
	b.Close()
	c := newTestClient(t, url)

	_, err := c.Deprovision(t.Context(), &DeprovisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p"})

	assert.Assert(t, IsNoAnswer(err), "got %v", err)
	assert.Assert(t, !IsTimeout(err))
	assert.Equal(t, StatusCode(err), 0)
	assert.Assert(t, is.Contains(err.Error(), "no answer from broker"))
}

func TestRetryAfter_BothFormsReachTheLastOperationResponse(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header string
		want   time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "7", 7 * time.Second},
		{"http date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"garbage", "soon", 0},
	}
	for _, tc := range tests {
		for _, binding := range []bool{false, true} {
			endpoint := "instance"
			if binding {
				endpoint = "binding"
			}
			t.Run(endpoint+"/"+tc.name, func(t *testing.T) {
				var headers []string
				if tc.header != "" {
					headers = []string{HeaderRetryAfter, tc.header}
				}
				b := newFakeBroker(t, reply(http.StatusOK, `{"state":"in progress"}`, headers...))
				c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.Now = func() time.Time { return now } })

				var resp *LastOperationResponse
				var err error
				if binding {
					resp, err = c.BindingLastOperation(t.Context(), &BindingLastOperationRequest{InstanceID: "i", BindingID: "b"})
				} else {
					resp, err = c.LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i"})
				}
				assert.NilError(t, err)
				assert.Equal(t, resp.RetryAfter, tc.want)
			})
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{" 30 ", 30 * time.Second},
		{"1.5", 0},
		{"99999999999999999999", 0}, // does not parse as int64
		{"9999999999", 24 * time.Hour},
		{now.Add(2 * time.Minute).Format(http.TimeFormat), 2 * time.Minute},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 24 * time.Hour},
		{"Sunday, 01-Mar-26 12:00:10 GMT", 10 * time.Second}, // RFC 850, still legal
		{"not a date", 0},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			assert.Equal(t, ParseRetryAfter(tc.value, now), tc.want)
		})
	}
}
