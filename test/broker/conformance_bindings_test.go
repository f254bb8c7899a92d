package broker

import (
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestBind_BadRequests_AreRefusedAndCreateNoBinding(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 1 })
	pg, hobby := DemoPostgresServiceID, DemoPostgresHobbyPlanID
	c.provisionSync("hobby", pg, hobby)
	c.provisionSync("redis", DemoRedisServiceID, DemoRedisSmallPlanID)
	c.do(http.MethodPut, instancePath("archive"), provisionBody(DemoObjectStorageServiceID, DemoObjectStorageArchivePlanID, nil)).expect(t, http.StatusCreated)
	c.do(http.MethodPut, instancePath("ha")+"?accepts_incomplete=true", provisionBody(pg, DemoPostgresHAPlanID, nil)).expect(t, http.StatusAccepted)
	c.do(http.MethodPut, bindingPath("hobby", "existing"), bindBody(pg, hobby, nil)).expect(t, http.StatusCreated)
	with := func(base map[string]any, k string, v any) map[string]any {
		base[k] = v
		return base
	}
	without := func(base map[string]any, k string) map[string]any {
		delete(base, k)
		return base
	}
	tests := []struct {
		name, instance string
		body           any
		async          bool
		status         int
		errorCode      string
		desc           string
	}{
		{"missing service_id", "hobby", without(bindBody(pg, hobby, nil), "service_id"), false, 400, "", "service_id"},
		{"missing plan_id", "hobby", without(bindBody(pg, hobby, nil), "plan_id"), false, 400, "", "plan_id"},
		{"unknown service_id", "hobby", bindBody("nope", hobby, nil), false, 400, "", "service_id"},
		{"unknown plan_id", "hobby", bindBody(pg, "nope", nil), false, 400, "", "plan_id"},
		{"plan other than the instance's", "hobby", bindBody(pg, DemoPostgresStandardPlanID, nil), false, 400, "", "not those of instance"},
		{"unknown instance", "nope", bindBody(pg, hobby, nil), false, 404, "", "does not exist"},
		{"parameter outside its enum", "hobby", bindBody(pg, hobby, map[string]any{"role": "superuser"}), false, 400, "", "role"},
		{"body not JSON", "hobby", "][", false, 400, "", "JSON"},
		{"plan not bindable", "archive", bindBody(DemoObjectStorageServiceID, DemoObjectStorageArchivePlanID, nil), false, 422, "", "not bindable"},
		{"plan requires an app and none is named", "redis", without(bindBody(DemoRedisServiceID, DemoRedisSmallPlanID, nil), "bind_resource"), false, 422, osb.ErrorCodeRequiresApp, "app_guid"},
		{"predecessor_binding_id on a plan that is not binding_rotatable", "hobby", with(bindBody(pg, hobby, nil), "predecessor_binding_id", "existing"), false, 400, "", "binding_rotatable"},
		{"predecessor_binding_id naming no binding", "ha", with(bindBody(pg, DemoPostgresHAPlanID, nil), "predecessor_binding_id", "nope"), true, 400, "", "predecessor_binding_id"},
		{"async-only bind without accepts_incomplete", "ha", bindBody(pg, DemoPostgresHAPlanID, nil), false, 422, osb.ErrorCodeAsyncRequired, "accepts_incomplete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := bindingPath(tc.instance, "new-binding")
			if tc.async {
				path += "?accepts_incomplete=true"
			}
			r := c.do(http.MethodPut, path, tc.body).expect(t, tc.status)
			e := r.errBody(t)
			assert.Check(t, is.Equal(e.Error, tc.errorCode))
			assert.Check(t, is.Contains(e.Description, tc.desc))
		})
	}
	assert.Check(t, is.Len(b.Bindings(), 1), "a 4xx must create no binding")
}

func TestBind_Sync_Answers201ThenIdentical200ThenConflicting409(t *testing.T) {
	b, c := startBroker(t)
	pg, hobby := DemoPostgresServiceID, DemoPostgresHobbyPlanID
	c.provisionSync("i1", pg, hobby)
	body := bindBody(pg, hobby, map[string]any{"role": "readonly"})
	var first osb.BindResponse
	c.do(http.MethodPut, bindingPath("i1", "b1"), body).expect(t, http.StatusCreated).decode(t, &first)
	for _, k := range []string{"host", "port", "username", "password", "uri", "database", "tls"} {
		assert.Check(t, first.Credentials[k] != nil, "credentials lack %q: %v", k, first.Credentials)
	}
	assert.Check(t, is.Equal(first.Credentials["port"], float64(5432)))
	assert.Check(t, strings.HasPrefix(first.Credentials["uri"].(string), "postgresql://"))
	_, nested := first.Credentials["tls"].(map[string]any)
	assert.Check(t, nested, "credentials carry a nested object")
	assert.Check(t, is.Len(first.Endpoints, 1))
	assert.Check(t, is.DeepEqual(first.Endpoints[0].Ports, []string{"5432"}))

	var again osb.BindResponse
	c.do(http.MethodPut, bindingPath("i1", "b1"), body).expect(t, http.StatusOK).decode(t, &again)
	assert.Check(t, is.DeepEqual(again.Credentials, first.Credentials), "an identical re-PUT returns the same binding")

	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(pg, hobby, map[string]any{"role": "readwrite"})).expect(t, http.StatusConflict)

	t.Run("another binding gets different credentials", func(t *testing.T) {
		var second osb.BindResponse
		c.do(http.MethodPut, bindingPath("i1", "b2"), body).expect(t, http.StatusCreated).decode(t, &second)
		assert.Check(t, second.Credentials["password"] != first.Credentials["password"])
		assert.Check(t, second.Credentials["username"] != first.Credentials["username"])
	})
	t.Run("GET binding returns credentials and defaulted parameters", func(t *testing.T) {
		var got osb.GetBindingResponse
		c.do(http.MethodGet, bindingPath("i1", "b1"), nil).expect(t, http.StatusOK).decode(t, &got)
		assert.Check(t, is.DeepEqual(got.Credentials, first.Credentials))
		assert.Check(t, is.Equal(string(got.Parameters), `{"role":"readonly"}`))
	})
	t.Run("binding id reused on another instance conflicts", func(t *testing.T) {
		c.provisionSync("i2", pg, hobby)
		c.do(http.MethodPut, bindingPath("i2", "b1"), body).expect(t, http.StatusConflict)
	})
	assert.Check(t, is.Len(b.Bindings(), 2))
}

func TestBind_RequiresApp_SucceedsWhenAppGUIDIsSent(t *testing.T) {
	_, c := startBroker(t)
	c.provisionSync("i1", DemoRedisServiceID, DemoRedisSmallPlanID)
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoRedisServiceID, DemoRedisSmallPlanID, nil)).expect(t, http.StatusCreated)
	deprecated := bindBody(DemoRedisServiceID, DemoRedisSmallPlanID, nil)
	delete(deprecated, "bind_resource")
	deprecated["app_guid"] = "app-2"
	var resp osb.BindResponse
	c.do(http.MethodPut, bindingPath("i1", "b2"), deprecated).expect(t, http.StatusCreated).decode(t, &resp)
	assert.Check(t, strings.HasPrefix(resp.Credentials["uri"].(string), "rediss://"))
}

func TestBind_SyslogDrainService_ReturnsSyslogDrainURL(t *testing.T) {
	_, c := startBroker(t)
	c.provisionSync("i1", DemoLogDrainServiceID, DemoLogDrainPlanID)
	var resp osb.BindResponse
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoLogDrainServiceID, DemoLogDrainPlanID, nil)).expect(t, http.StatusCreated).decode(t, &resp)
	assert.Check(t, strings.HasPrefix(resp.SyslogDrainURL, "syslog-tls://"))
}

func TestBind_Async_CredentialsOnlyFromGetBindingAfterSucceeded(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 300 * 1e6 })
	pg, ha := DemoPostgresServiceID, DemoPostgresHAPlanID
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(pg, ha, nil)).expect(t, http.StatusAccepted).decode(t, &prov)
	c.pollUntilDone(lastOpPath(instancePath("i1"), pg, ha, prov.Operation))

	path := bindingPath("i1", "b1") + "?accepts_incomplete=true"
	r := c.do(http.MethodPut, path, bindBody(pg, ha, nil)).expect(t, http.StatusAccepted)
	var resp osb.BindResponse
	r.decode(t, &resp)
	assert.Assert(t, resp.Operation != "")
	assert.Check(t, !strings.Contains(string(r.body), "credentials"), "a 202 must not carry credentials")

	t.Run("re-sent PUT gets 202", func(t *testing.T) {
		c.do(http.MethodPut, path, bindBody(pg, ha, nil)).expect(t, http.StatusAccepted)
	})
	t.Run("GET binding while creating answers 404", func(t *testing.T) {
		c.do(http.MethodGet, bindingPath("i1", "b1"), nil).expect(t, http.StatusNotFound)
	})
	t.Run("another bind on the instance meanwhile gets 422 ConcurrencyError", func(t *testing.T) {
		r := c.do(http.MethodPut, bindingPath("i1", "b2")+"?accepts_incomplete=true", bindBody(pg, ha, nil)).expect(t, http.StatusUnprocessableEntity)
		assert.Check(t, is.Equal(r.errBody(t).Error, osb.ErrorCodeConcurrencyError))
	})
	t.Run("unbind meanwhile gets 422 ConcurrencyError", func(t *testing.T) {
		r := c.do(http.MethodDelete, deletePath(bindingPath("i1", "b1"), pg, ha, true), nil).expect(t, http.StatusUnprocessableEntity)
		assert.Check(t, is.Equal(r.errBody(t).Error, osb.ErrorCodeConcurrencyError))
	})
	var got osb.GetBindingResponse
	t.Run("after succeeded GET binding has credentials and expiry metadata", func(t *testing.T) {
		_, lo := c.pollUntilDone(lastOpPath(bindingPath("i1", "b1"), pg, ha, resp.Operation))
		assert.Assert(t, is.Equal(lo.State, osb.StateSucceeded))
		c.do(http.MethodGet, bindingPath("i1", "b1"), nil).expect(t, http.StatusOK).decode(t, &got)
		assert.Check(t, got.Credentials["password"] != nil)
		assert.Assert(t, got.Metadata != nil)
		assert.Check(t, got.Metadata.ExpiresAt != "" && got.Metadata.RenewBefore < got.Metadata.ExpiresAt, "%+v", got.Metadata)
		assert.Check(t, strings.HasSuffix(got.Metadata.ExpiresAt, "Z"))
	})
	t.Run("rotation with predecessor_binding_id keeps the user and changes the password", func(t *testing.T) {
		body := bindBody(pg, ha, nil)
		body["predecessor_binding_id"] = "b1"
		var rot osb.BindResponse
		c.do(http.MethodPut, bindingPath("i1", "b1-rotated")+"?accepts_incomplete=true", body).expect(t, http.StatusAccepted).decode(t, &rot)
		c.pollUntilDone(lastOpPath(bindingPath("i1", "b1-rotated"), pg, ha, rot.Operation))
		var rotated osb.GetBindingResponse
		c.do(http.MethodGet, bindingPath("i1", "b1-rotated"), nil).expect(t, http.StatusOK).decode(t, &rotated)
		assert.Check(t, is.Equal(rotated.Credentials["username"], got.Credentials["username"]))
		assert.Check(t, rotated.Credentials["password"] != got.Credentials["password"])
		bd, _ := b.Binding("b1-rotated")
		assert.Check(t, is.Equal(bd.PredecessorBindingID, "b1"))
	})
}

func TestGetBinding_ServiceNotBindingsRetrievable_Answers400(t *testing.T) {
	_, c := startBroker(t)
	c.provisionSync("i1", DemoRedisServiceID, DemoRedisSmallPlanID)
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoRedisServiceID, DemoRedisSmallPlanID, nil)).expect(t, http.StatusCreated)
	c.do(http.MethodGet, bindingPath("i1", "b1"), nil).expect(t, http.StatusBadRequest)
	c.do(http.MethodGet, bindingPath("i1", "nope"), nil).expect(t, http.StatusNotFound)
}

func TestUnbind_AnswersPerSpec(t *testing.T) {
	b, c := startBroker(t)
	pg, hobby := DemoPostgresServiceID, DemoPostgresHobbyPlanID
	c.provisionSync("i1", pg, hobby)
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(pg, hobby, nil)).expect(t, http.StatusCreated)
	tests := []struct {
		name, path string
		status     int
	}{
		{"missing service_id", bindingPath("i1", "b1") + "?plan_id=" + hobby, 400},
		{"missing plan_id", bindingPath("i1", "b1") + "?service_id=" + pg, 400},
		{"unknown binding", deletePath(bindingPath("i1", "nope"), pg, hobby, false), 410},
		{"binding of another instance", deletePath(bindingPath("other", "b1"), pg, hobby, false), 410},
		{"existing binding", deletePath(bindingPath("i1", "b1"), pg, hobby, false), 200},
		{"the same binding again", deletePath(bindingPath("i1", "b1"), pg, hobby, false), 410},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.do(http.MethodDelete, tc.path, nil).expect(t, tc.status)
		})
	}
	assert.Check(t, is.Len(b.Bindings(), 0))
	c.do(http.MethodGet, lastOpPath(bindingPath("i1", "b1"), "", "", ""), nil).expect(t, http.StatusGone)
}

func TestUnbind_Async_LastOperationAnswers410WhenFinished(t *testing.T) {
	_, c := startBroker(t)
	pg, ha := DemoPostgresServiceID, DemoPostgresHAPlanID
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(pg, ha, nil)).expect(t, http.StatusAccepted).decode(t, &prov)
	c.pollUntilDone(lastOpPath(instancePath("i1"), pg, ha, prov.Operation))
	var bind osb.BindResponse
	c.do(http.MethodPut, bindingPath("i1", "b1")+"?accepts_incomplete=true", bindBody(pg, ha, nil)).expect(t, http.StatusAccepted).decode(t, &bind)
	c.pollUntilDone(lastOpPath(bindingPath("i1", "b1"), pg, ha, bind.Operation))

	c.do(http.MethodDelete, deletePath(bindingPath("i1", "b1"), pg, ha, false), nil).expect(t, http.StatusUnprocessableEntity)
	var unbind osb.UnbindResponse
	c.do(http.MethodDelete, deletePath(bindingPath("i1", "b1"), pg, ha, true), nil).expect(t, http.StatusAccepted).decode(t, &unbind)
	assert.Assert(t, unbind.Operation != "")
	r, _ := c.pollUntilDone(lastOpPath(bindingPath("i1", "b1"), pg, ha, unbind.Operation))
	r.expect(t, http.StatusGone)
}
