package osb

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestWalkCatalog_CallsFnWithEachServiceInOrder(t *testing.T) {
	body := `{"services":[{"id":"a","name":"a","plans":[{"id":"p","name":"p"}]},{"id":"b","name":"b","plans":[]}],"extra":{"x":[1,2]}}`
	b := newFakeBroker(t, reply(http.StatusOK, body))
	c := newTestClient(t, b.URL)

	var ids []string
	err := WalkCatalog(t.Context(), c, nil, func(s *Service) error {
		ids = append(ids, s.ID)
		return nil
	})

	assert.NilError(t, err)
	assert.DeepEqual(t, ids, []string{"a", "b"})
}

func TestWalkCatalog_AnErrorOfFnStopsTheWalkAndComesBackAsItIs(t *testing.T) {
	body := `{"services":[{"id":"a","name":"a"},{"id":"b","name":"b"}]}`
	b := newFakeBroker(t, reply(http.StatusOK, body))
	c := newTestClient(t, b.URL)
	stop := errors.New("stop here")

	calls := 0
	err := WalkCatalog(t.Context(), c, nil, func(*Service) error { calls++; return stop })

	assert.Equal(t, err, stop)
	assert.Equal(t, calls, 1)
	assert.Assert(t, !IsMalformedResponseError(err))
}

func TestWalkCatalog_ABodyOverTheCapFailsMidWay(t *testing.T) {
	svc := `{"id":"a","name":"a","description":"` + strings.Repeat("d", 500) + `"}`
	body := `{"services":[` + svc + `,` + strings.Replace(svc, `"a"`, `"b"`, 2) + `]}`
	b := newFakeBroker(t, reply(http.StatusOK, body))
	c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.MaxCatalogBytes = int64(len(body)) - 10 })

	err := WalkCatalog(t.Context(), c, nil, func(*Service) error { return nil })

	var tooLarge *BodyTooLargeError
	assert.Assert(t, errors.As(err, &tooLarge), "got %v", err)
	assert.Assert(t, IsMalformedResponseError(err))
}

func TestWalkCatalog_ARequestsOwnCapBelowTheClientsApplies(t *testing.T) {
	svc := `{"id":"a","name":"a","description":"` + strings.Repeat("d", 500) + `"}`
	body := `{"services":[` + svc + `]}`
	b := newFakeBroker(t, reply(http.StatusOK, body))
	c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.MaxCatalogBytes = int64(len(body)) * 2 })

	assert.NilError(t, WalkCatalog(t.Context(), c, nil, func(*Service) error { return nil }))
	err := WalkCatalog(t.Context(), c, &CatalogRequest{MaxBytes: 100}, func(*Service) error { return nil })
	var tooLarge *BodyTooLargeError
	assert.Assert(t, errors.As(err, &tooLarge), "got %v", err)
	assert.Equal(t, tooLarge.Limit, int64(100))
	// A request's cap above the client's does not raise it.
	err = WalkCatalog(t.Context(), c, &CatalogRequest{MaxBytes: 1 << 30}, func(*Service) error { return nil })
	assert.NilError(t, err)
}

func TestWalkCatalog_AConnectionCutMidBodyIsATransportError(t *testing.T) {
	b := newFakeBroker(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"services":[{"id":"a","name":"a"},{"id":"b",`))
		// The handler returns: the server closes the connection short of the length.
	})
	c := newTestClient(t, b.URL)

	err := WalkCatalog(t.Context(), c, nil, func(*Service) error { return nil })

	var te *TransportError
	assert.Assert(t, errors.As(err, &te), "got %T %v", err, err)
	assert.Assert(t, !IsMalformedResponseError(err))
}

func TestDecodeCatalog_RefusesWhatAStreamCannotReadTheSameWayTwice(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"two services keys", `{"services":[],"Services":[]}`, `more than one "services" key`},
		{"data after the object", `{"services":[]} {}`, "data after the JSON object"},
		{"services not a list", `{"services":{"id":"a"}}`, `"services" is not a list`},
		{"cut short", `{"services":[{"id":"a"}`, "ends before"},
		{"no services", `{"other":1}`, `no "services" key`},
		{"not an object", `[1]`, "not a JSON object"},
		{"empty", ` `, "empty body"},
		{"a value of the wrong type", `{"services":[{"id":7}]}`, `field "id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeCatalog([]byte(tc.body))
			assert.ErrorContains(t, err, tc.want)
			assert.Assert(t, !strings.Contains(err.Error(), "7"), "the error quotes the body: %v", err)
		})
	}
}
