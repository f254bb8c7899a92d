package broker

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestAdmin_FaultsOverHTTP(t *testing.T) {
	b, c := startBroker(t)
	var created struct{ IDs []string }
	c.do(http.MethodPost, "/admin/faults", `{"op":"catalog","action":"respond","status":500,"times":2,"description":"boom"}`).expect(t, http.StatusCreated).decode(t, &created)
	assert.Assert(t, is.Len(created.IDs, 1))

	var listed []Fault
	c.do(http.MethodGet, "/admin/faults", nil).expect(t, http.StatusOK).decode(t, &listed)
	assert.Assert(t, is.Len(listed, 1))
	assert.Check(t, is.Equal(listed[0].Remaining, 2))

	c.do(http.MethodGet, "/v2/catalog", nil).expect(t, 500)
	c.do(http.MethodDelete, "/admin/faults/"+created.IDs[0], nil).expect(t, http.StatusOK)
	c.do(http.MethodGet, "/v2/catalog", nil).expect(t, 200)
	c.do(http.MethodDelete, "/admin/faults/"+created.IDs[0], nil).expect(t, http.StatusNotFound)

	t.Run("an array injects several", func(t *testing.T) {
		c.do(http.MethodPost, "/admin/faults", `[{"op":"provision","action":"hang"},{"op":"bind","when":"after","action":"close"}]`).expect(t, http.StatusCreated)
		assert.Check(t, is.Len(b.Faults(), 2))
		c.do(http.MethodDelete, "/admin/faults", nil).expect(t, http.StatusOK)
		assert.Check(t, is.Len(b.Faults(), 0))
	})
	t.Run("a misspelt field is refused", func(t *testing.T) {
		r := c.do(http.MethodPost, "/admin/faults", `{"op":"catalog","action":"hang","instanceid":"x"}`).expect(t, http.StatusBadRequest)
		assert.Check(t, is.Contains(string(r.body), "unknown field"))
	})
	t.Run("an invalid fault in an array injects none", func(t *testing.T) {
		c.do(http.MethodPost, "/admin/faults", `[{"op":"catalog","action":"hang"},{"op":"catalog"}]`).expect(t, http.StatusBadRequest)
		assert.Check(t, is.Len(b.Faults(), 0))
	})
	t.Run("a delay fault takes a duration string", func(t *testing.T) {
		c.do(http.MethodPost, "/admin/faults", `{"op":"catalog","action":"delay","delay":"10ms"}`).expect(t, http.StatusCreated)
		c.do(http.MethodGet, "/v2/catalog", nil).expect(t, 200)
	})
}

func TestAdmin_StateRequestsAndReset(t *testing.T) {
	b, c := startBroker(t)
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, http.StatusCreated)

	var snap StateSnapshot
	c.do(http.MethodGet, "/admin/state", nil).expect(t, http.StatusOK).decode(t, &snap)
	assert.Check(t, is.Len(snap.Instances, 1))
	assert.Check(t, is.Len(snap.Bindings, 1))
	assert.Check(t, is.Equal(snap.MaxConcurrent["instance/i1"], 1))
	assert.Check(t, is.Equal(snap.MaxConcurrentOverall, 1))

	var reqs []RecordedRequest
	c.do(http.MethodGet, "/admin/requests", nil).expect(t, http.StatusOK).decode(t, &reqs)
	assert.Check(t, is.Len(reqs, 2), "admin calls are not logged")
	c.do(http.MethodGet, "/admin/requests?since=1", nil).expect(t, http.StatusOK).decode(t, &reqs)
	assert.Assert(t, is.Len(reqs, 1))
	assert.Check(t, is.Equal(reqs[0].Op, OpBind))
	assert.Check(t, !strings.Contains(string(c.do(http.MethodGet, "/admin/requests", nil).body), testPass))

	var forgot map[string]bool
	c.do(http.MethodPost, "/admin/forget", `{"binding_id":"b1"}`).expect(t, http.StatusOK).decode(t, &forgot)
	assert.Check(t, forgot["dropped"])
	assert.Check(t, is.Len(b.Bindings(), 0))

	c.do(http.MethodDelete, "/admin/requests", nil).expect(t, http.StatusOK)
	assert.Check(t, is.Len(b.Requests(), 0))

	c.do(http.MethodPost, "/admin/reset", nil).expect(t, http.StatusOK)
	assert.Check(t, is.Len(b.Instances(), 0))
	assert.Check(t, is.Equal(b.MaxConcurrentOverall(), 0))
}

func TestAdmin_CatalogAndAsyncDelay(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, "/admin/catalog", `services: [{name: tiny, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, x-test-broker: {async: [provision]}}]}]`).expect(t, http.StatusOK)
	r := c.do(http.MethodGet, "/admin/catalog", nil).expect(t, http.StatusOK)
	assert.Check(t, is.Contains(string(r.body), BehaviourKey), "the admin view shows behaviours")
	served := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	assert.Check(t, is.Contains(string(served.body), `"tiny"`))

	c.do(http.MethodPut, "/admin/catalog", `services: [{name: broken}]`).expect(t, http.StatusBadRequest)
	c.do(http.MethodPut, "/admin/async-delay", `{"delay":"2h"}`).expect(t, http.StatusOK)
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody("s1", "p1", nil)).expect(t, 202)
	inst, _ := b.Instance("i1")
	assert.Check(t, inst.LastOperation.DoneAt.Sub(inst.LastOperation.StartedAt).Hours() == 2)
	c.do(http.MethodPut, "/admin/async-delay", `{"delay":"soon"}`).expect(t, http.StatusBadRequest)
	c.do(http.MethodGet, "/admin/nothing", nil).expect(t, http.StatusNotFound)
}

func TestAdmin_IsProtected(t *testing.T) {
	t.Run("needs the broker's credentials", func(t *testing.T) {
		_, c := startBroker(t)
		c.do(http.MethodGet, "/admin/state", nil, withoutAuth()).expect(t, http.StatusUnauthorized)
		c.do(http.MethodGet, "/admin/state", nil, withBearer(testToken)).expect(t, http.StatusOK)
	})
	serve := func(o Options, remote string) int {
		b, err := New(o)
		assert.NilError(t, err)
		req := httptest.NewRequest(http.MethodGet, "/admin/state", nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		b.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	t.Run("refuses remote clients", func(t *testing.T) {
		assert.Check(t, is.Equal(serve(Options{}, "10.1.2.3:4567"), http.StatusForbidden))
		assert.Check(t, is.Equal(serve(Options{}, "[::1]:4567"), http.StatusOK))
	})
	t.Run("remote clients can be allowed", func(t *testing.T) {
		assert.Check(t, is.Equal(serve(Options{AdminAllowRemote: true}, "10.1.2.3:4567"), http.StatusOK))
	})
	t.Run("can be disabled", func(t *testing.T) {
		assert.Check(t, is.Equal(serve(Options{DisableAdmin: true}, "127.0.0.1:4567"), http.StatusNotFound))
	})
}
