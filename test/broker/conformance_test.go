package broker

import (
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Section 8 of the project's OSB checklist, "Broker-side conformance the test
// broker must show", walked row by row over real HTTP.

type endpoint struct {
	name, method, path string
	body               any
}

func allEndpoints() []endpoint {
	pg, hobby := DemoPostgresServiceID, DemoPostgresHobbyPlanID
	return []endpoint{
		{"catalog", http.MethodGet, "/v2/catalog", nil},
		{"provision", http.MethodPut, instancePath("i1"), provisionBody(pg, hobby, nil)},
		{"update", http.MethodPatch, instancePath("i1"), map[string]any{"service_id": pg}},
		{"deprovision", http.MethodDelete, deletePath(instancePath("i1"), pg, hobby, false), nil},
		{"get instance", http.MethodGet, instancePath("i1"), nil},
		{"last operation", http.MethodGet, lastOpPath(instancePath("i1"), "", "", ""), nil},
		{"bind", http.MethodPut, bindingPath("i1", "b1"), bindBody(pg, hobby, nil)},
		{"unbind", http.MethodDelete, deletePath(bindingPath("i1", "b1"), pg, hobby, false), nil},
		{"get binding", http.MethodGet, bindingPath("i1", "b1"), nil},
		{"binding last operation", http.MethodGet, lastOpPath(bindingPath("i1", "b1"), "", "", ""), nil},
	}
}

func TestEveryEndpoint_WithoutAcceptableVersionHeader_Answers412(t *testing.T) {
	b, c := startBroker(t)
	versions := []struct {
		name string
		opt  reqOpt
		want int
	}{
		{"missing", withoutVersion(), http.StatusPreconditionFailed},
		{"major 3", withVersion("3.0"), http.StatusPreconditionFailed},
		{"malformed", withVersion("two"), http.StatusPreconditionFailed},
		{"no minor", withVersion("2"), http.StatusPreconditionFailed},
	}
	for _, ep := range allEndpoints() {
		for _, v := range versions {
			t.Run(ep.name+"/"+v.name, func(t *testing.T) {
				r := c.do(ep.method, ep.path, ep.body, v.opt).expect(t, v.want)
				assert.Check(t, is.Contains(r.errBody(t).Description, "2.17"))
			})
		}
	}
	assert.Check(t, is.Len(b.Instances(), 0), "a 412 must leave the broker unchanged")
}

func TestEveryEndpoint_OlderMinorVersion_IsAccepted(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodGet, "/v2/catalog", nil, withVersion("2.13")).expect(t, http.StatusOK)
}

func TestEveryEndpoint_WithBadOrMissingAuth_Answers401(t *testing.T) {
	b, c := startBroker(t)
	auths := []struct {
		name string
		opt  reqOpt
	}{
		{"none", withoutAuth()},
		{"wrong password", withBasic(testUser, "nope")},
		{"wrong user", withBasic("someone", testPass)},
		{"wrong bearer", withBearer("nope")},
		{"bearer scheme with basic secret", withHeader("Authorization", "Bearer "+testPass)},
	}
	for _, ep := range allEndpoints() {
		for _, a := range auths {
			t.Run(ep.name+"/"+a.name, func(t *testing.T) {
				r := c.do(ep.method, ep.path, ep.body, a.opt).expect(t, http.StatusUnauthorized)
				assert.Check(t, r.header.Get("WWW-Authenticate") != "")
			})
		}
	}
	assert.Check(t, is.Len(b.Instances(), 0), "a 401 must leave the broker unchanged")
}

func TestAuth_BasicAndBearerAreBothAccepted(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodGet, "/v2/catalog", nil, withBasic(testUser, testPass)).expect(t, http.StatusOK)
	c.do(http.MethodGet, "/v2/catalog", nil, withBearer(testToken)).expect(t, http.StatusOK)
	c.do(http.MethodGet, "/v2/catalog", nil, withHeader("Authorization", "bearer "+testToken)).expect(t, http.StatusOK)
}

func TestAuth_BearerOnlyBroker_RefusesBasic(t *testing.T) {
	_, c := startBroker(t, func(o *Options) { o.Username, o.Password = "", "" })
	c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusUnauthorized)
	c.do(http.MethodGet, "/v2/catalog", nil, withBearer(testToken)).expect(t, http.StatusOK)
}

func TestCatalog_Answers200WithServicesAndWithoutBrokerBehaviour(t *testing.T) {
	_, c := startBroker(t)
	r := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	var cat osb.CatalogResponse
	r.decode(t, &cat)
	assert.Check(t, is.Len(cat.Services, 4))
	assert.Check(t, !strings.Contains(string(r.body), BehaviourKey), "behaviour must not be served")
	assert.Check(t, is.Equal(r.header.Get("Content-Type"), "application/json"))

	etag := r.header.Get("ETag")
	assert.Assert(t, etag != "")
	c.do(http.MethodGet, "/v2/catalog", nil, withHeader("If-None-Match", etag)).expect(t, http.StatusNotModified)
}

func TestCatalog_EmptyCatalog_Answers200WithEmptyList(t *testing.T) {
	_, c := startBroker(t, func(o *Options) { o.Catalog = &Catalog{} })
	r := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	assert.Equal(t, strings.TrimSpace(string(r.body)), `{"services":[]}`)
}

func TestRequestIdentity_IsEchoedOnEveryAnswer(t *testing.T) {
	_, c := startBroker(t)
	for _, tc := range []struct {
		name string
		opts []reqOpt
		want int
	}{
		{"success", nil, http.StatusOK},
		{"401", []reqOpt{withoutAuth()}, http.StatusUnauthorized},
		{"412", []reqOpt{withoutVersion()}, http.StatusPreconditionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append(tc.opts, withHeader(osb.HeaderRequestIdentity, "req-"+tc.name))
			r := c.do(http.MethodGet, "/v2/catalog", nil, opts...).expect(t, tc.want)
			assert.Equal(t, r.header.Get(osb.HeaderRequestIdentity), "req-"+tc.name)
		})
	}
}

func TestOriginatingIdentity_IsDecodedAndRecorded(t *testing.T) {
	b, c := startBroker(t)
	user := map[string]any{"username": "alice", "uid": "u-1", "groups": []string{"dev"}, "extra": map[string][]string{"team": {"a"}}}
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil),
		withHeader(osb.HeaderOriginatingIdentity, originatingIdentity("kubernetes", user))).expect(t, http.StatusCreated)

	reqs := b.RequestsFor(OpProvision)
	assert.Assert(t, is.Len(reqs, 1))
	k, ok := reqs[0].OriginatingIdentity.Kubernetes()
	assert.Assert(t, ok)
	assert.Check(t, is.Equal(k.Username, "alice"))
	assert.Check(t, is.DeepEqual(k.Groups, []string{"dev"}))
	inst, _ := b.Instance("i1")
	assert.Check(t, is.Equal(inst.OriginatingIdentity.Platform, "kubernetes"))
	assert.Check(t, is.Len(b.Violations(), 0))
}

func TestOriginatingIdentity_PlatformDifferentFromContext_IsAViolation(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil),
		withHeader(osb.HeaderOriginatingIdentity, originatingIdentity("cloudfoundry", map[string]any{"user_id": "x"}))).expect(t, http.StatusCreated)
	assert.Assert(t, is.Len(b.Violations(), 1))
	assert.Check(t, is.Contains(b.Violations()[0], "context.platform"))
}

func TestProvision_BadRequests_AreRefusedAndLeaveNoInstance(t *testing.T) {
	pg, hobby, std := DemoPostgresServiceID, DemoPostgresHobbyPlanID, DemoPostgresStandardPlanID
	without := func(field string) map[string]any {
		body := provisionBody(pg, hobby, nil)
		delete(body, field)
		return body
	}
	with := func(k string, v any) map[string]any {
		body := provisionBody(pg, hobby, nil)
		body[k] = v
		return body
	}
	tests := []struct {
		name      string
		body      any
		async     bool
		status    int
		errorCode string
		desc      string
	}{
		{"missing service_id", without("service_id"), false, 400, "", "service_id"},
		{"missing plan_id", without("plan_id"), false, 400, "", "plan_id"},
		{"missing organization_guid", without("organization_guid"), false, 400, "", "organization_guid"},
		{"missing space_guid", without("space_guid"), false, 400, "", "space_guid"},
		{"empty organization_guid", with("organization_guid", ""), false, 400, "", "organization_guid"},
		{"unknown service_id", with("service_id", "nope"), false, 400, "", "service_id"},
		{"unknown plan_id", with("plan_id", "nope"), false, 400, "", "plan_id"},
		{"plan of another service", with("plan_id", DemoRedisSmallPlanID), false, 400, "", "does not belong"},
		{"body not JSON", "{not json", false, 400, "", "JSON"},
		{"no body", "", false, 400, "", "JSON body"},
		{"parameters not an object", with("parameters", []int{1}), false, 400, "", "parameters"},
		{"parameter outside its enum", with("parameters", map[string]any{"version": "9"}), false, 400, "", "version"},
		{"parameter above its maximum", with("parameters", map[string]any{"storage_gb": 11}), false, 400, "", "storage_gb"},
		{"parameter of the wrong type", with("parameters", map[string]any{"storage_gb": "big"}), false, 400, "", "storage_gb"},
		{"unknown parameter", with("parameters", map[string]any{"colour": "red"}), false, 400, "", "colour"},
		{"draft 2020-12 schema violation", provisionBody(pg, std, map[string]any{"storage_gb": 5}), true, 400, "", "storage_gb"},
		{"async-only plan without accepts_incomplete", provisionBody(pg, std, nil), false, 422, osb.ErrorCodeAsyncRequired, "accepts_incomplete"},
		{"maintenance_info version mismatch", func() map[string]any {
			body := provisionBody(pg, std, nil)
			body["maintenance_info"] = map[string]any{"version": "1.0.0"}
			return body
		}(), true, 422, osb.ErrorCodeMaintenanceInfoConflict, "2.1.0"},
		{"maintenance_info on a plan without one", with("maintenance_info", map[string]any{"version": "1.0.0"}), false, 422, osb.ErrorCodeMaintenanceInfoConflict, "no maintenance_info"},
	}
	b, c := startBroker(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := instancePath("inst-" + strings.ReplaceAll(tc.name, " ", "-"))
			if tc.async {
				path += "?accepts_incomplete=true"
			}
			r := c.do(http.MethodPut, path, tc.body).expect(t, tc.status)
			e := r.errBody(t)
			assert.Check(t, is.Equal(e.Error, tc.errorCode))
			assert.Check(t, is.Contains(e.Description, tc.desc))
		})
	}
	assert.Check(t, is.Len(b.Instances(), 0), "a 4xx must leave the broker unchanged")
}

func TestProvision_Sync_Answers201ThenIdentical200ThenConflicting409(t *testing.T) {
	_, c := startBroker(t)
	body := provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, map[string]any{"storage_gb": 2})
	r := c.do(http.MethodPut, instancePath("i1"), body).expect(t, http.StatusCreated)
	var created osb.ProvisionResponse
	r.decode(t, &created)
	assert.Check(t, is.Equal(created.Operation, ""))
	assert.Check(t, strings.HasSuffix(created.DashboardURL, "/dashboard/i1"), created.DashboardURL)

	c.do(http.MethodPut, instancePath("i1"), body).expect(t, http.StatusOK)

	conflicts := map[string]map[string]any{
		"different parameters": provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, map[string]any{"storage_gb": 3}),
		"different plan":       provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, map[string]any{"storage_gb": 20}),
		"different space": func() map[string]any {
			b := provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, map[string]any{"storage_gb": 2})
			b["space_guid"] = "other"
			return b
		}(),
	}
	for name, body := range conflicts {
		t.Run(name, func(t *testing.T) {
			c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", body).expect(t, http.StatusConflict)
		})
	}
}

func TestProvision_Async_Answers202AndLastOperationRoundTripsTheOperation(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 300 * 1e6 })
	body := provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)
	path := instancePath("i1") + "?accepts_incomplete=true"
	r := c.do(http.MethodPut, path, body).expect(t, http.StatusAccepted)
	var resp osb.ProvisionResponse
	r.decode(t, &resp)
	assert.Assert(t, resp.Operation != "")
	assert.Check(t, strings.ContainsAny(resp.Operation, " +&=%#?"), "operation keys exercise percent-encoding: %q", resp.Operation)

	t.Run("re-sent PUT before completion gets 202 with the same operation", func(t *testing.T) {
		var again osb.ProvisionResponse
		c.do(http.MethodPut, path, body).expect(t, http.StatusAccepted).decode(t, &again)
		assert.Equal(t, again.Operation, resp.Operation)
	})
	t.Run("poll in progress sends Retry-After", func(t *testing.T) {
		r := c.do(http.MethodGet, lastOpPath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, resp.Operation), nil).expect(t, http.StatusOK)
		var lo osb.LastOperationResponse
		r.decode(t, &lo)
		assert.Check(t, is.Equal(lo.State, osb.StateInProgress))
		assert.Check(t, is.Equal(r.header.Get(osb.HeaderRetryAfter), "1"))
	})
	t.Run("poll with another operation is refused", func(t *testing.T) {
		r := c.do(http.MethodGet, lastOpPath(instancePath("i1"), "", "", "provision other"), nil).expect(t, http.StatusBadRequest)
		assert.Check(t, is.Contains(r.errBody(t).Description, "not the last operation"))
	})
	t.Run("poll with the operation unencoded is refused", func(t *testing.T) {
		c.do(http.MethodGet, instancePath("i1")+"/last_operation?operation="+resp.Operation, nil).expect(t, http.StatusBadRequest)
	})
	t.Run("poll reaches succeeded", func(t *testing.T) {
		r, lo := c.pollUntilDone(lastOpPath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, resp.Operation))
		r.expect(t, http.StatusOK)
		assert.Check(t, is.Equal(lo.State, osb.StateSucceeded))
		assert.Check(t, is.Equal(r.header.Get(osb.HeaderRetryAfter), ""), "no Retry-After once finished")
	})
	t.Run("identical PUT after completion gets 200", func(t *testing.T) {
		c.do(http.MethodPut, path, body).expect(t, http.StatusOK)
	})
	t.Run("polling again after completion still says succeeded", func(t *testing.T) {
		var lo osb.LastOperationResponse
		c.do(http.MethodGet, lastOpPath(instancePath("i1"), "", "", resp.Operation), nil).expect(t, http.StatusOK).decode(t, &lo)
		assert.Check(t, is.Equal(lo.State, osb.StateSucceeded))
	})
	assert.Check(t, is.Len(b.Violations(), 0), "%v", b.Violations())
}

func TestLastOperation_WithoutOperation_IsServedButRecordedAsViolation(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, http.StatusAccepted)
	c.do(http.MethodGet, instancePath("i1")+"/last_operation", nil).expect(t, http.StatusOK)
	assert.Assert(t, is.Len(b.Violations(), 1))
	assert.Check(t, is.Contains(b.Violations()[0], "without the operation"))
}

func TestLastOperation_UnknownInstance_Answers404(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodGet, lastOpPath(instancePath("never"), "", "", ""), nil).expect(t, http.StatusNotFound)
	c.do(http.MethodGet, lastOpPath(bindingPath("never", "b"), "", "", ""), nil).expect(t, http.StatusNotFound)
}

func TestProvision_SchemaDefaults_AreAppliedAndVisibleInGetInstance(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, map[string]any{"storage_gb": 5})).expect(t, http.StatusCreated)
	var got osb.GetInstanceResponse
	c.do(http.MethodGet, instancePath("i1"), nil).expect(t, http.StatusOK).decode(t, &got)
	assert.Check(t, is.Equal(got.ServiceID, DemoPostgresServiceID))
	assert.Check(t, is.Equal(got.PlanID, DemoPostgresHobbyPlanID))
	assert.Check(t, is.Equal(string(got.Parameters), `{"storage_gb":5,"version":"16"}`))
	assert.Check(t, got.Metadata != nil && got.Metadata.Labels["test-broker.kubectl-catalog.io/plan"] == "hobby")
}

func TestGetInstance_AnswersPerSpec(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 5 * 1e9 })
	c.provisionSync("redis", DemoRedisServiceID, DemoRedisSmallPlanID)
	c.do(http.MethodPut, instancePath("provisioning")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, http.StatusAccepted)
	c.provisionSync("updating", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	b.SetPlanBehaviour(DemoPostgresHobbyPlanID, PlanBehaviour{Async: []Op{OpUpdate}})
	c.do(http.MethodPatch, instancePath("updating")+"?accepts_incomplete=true", map[string]any{"service_id": DemoPostgresServiceID, "parameters": map[string]any{"storage_gb": 4}}).expect(t, http.StatusAccepted)

	tests := []struct {
		name, id  string
		status    int
		errorCode string
	}{
		{"unknown instance", "nope", 404, ""},
		{"service not instances_retrievable", "redis", 400, ""},
		{"still provisioning", "provisioning", 404, ""},
		{"being updated", "updating", 422, osb.ErrorCodeConcurrencyError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(http.MethodGet, instancePath(tc.id), nil).expect(t, tc.status)
			assert.Check(t, is.Equal(r.errBody(t).Error, tc.errorCode))
		})
	}
}

func TestUpdate_BadRequests_AreRefusedAndLeaveTheInstanceUnchanged(t *testing.T) {
	b, c := startBroker(t)
	pg := DemoPostgresServiceID
	c.provisionSync("hobby", pg, DemoPostgresHobbyPlanID)
	b.SetPlanBehaviour(DemoPostgresHAPlanID, PlanBehaviour{})
	c.provisionSync("ha", pg, DemoPostgresHAPlanID)
	b.ReplaceCatalog(DefaultCatalog())
	before := b.Instances()

	tests := []struct {
		name, id  string
		body      map[string]any
		async     bool
		status    int
		errorCode string
		desc      string
	}{
		{"missing service_id", "hobby", map[string]any{"parameters": map[string]any{"storage_gb": 2}}, true, 400, "", "service_id"},
		{"unknown instance", "nope", map[string]any{"service_id": pg}, true, 404, "", "does not exist"},
		{"service_id of another service", "hobby", map[string]any{"service_id": DemoRedisServiceID}, true, 400, "", "service_id"},
		{"unknown plan_id", "hobby", map[string]any{"service_id": pg, "plan_id": "nope"}, true, 400, "", "plan_id"},
		{"plan change on a plan that is not plan_updateable", "ha", map[string]any{"service_id": pg, "plan_id": DemoPostgresHobbyPlanID}, true, 422, "", "plan_updateable"},
		{"maintenance_info version mismatch", "hobby", map[string]any{"service_id": pg, "plan_id": DemoPostgresStandardPlanID, "maintenance_info": map[string]any{"version": "2.0.0"}}, true, 422, osb.ErrorCodeMaintenanceInfoConflict, "2.1.0"},
		{"parameter violating the update schema", "hobby", map[string]any{"service_id": pg, "parameters": map[string]any{"storage_gb": 50}}, true, 400, "", "storage_gb"},
		{"parameter the update schema does not allow", "hobby", map[string]any{"service_id": pg, "parameters": map[string]any{"version": "15"}}, true, 400, "", "version"},
		{"async-only update without accepts_incomplete", "hobby", map[string]any{"service_id": pg, "plan_id": DemoPostgresStandardPlanID}, false, 422, osb.ErrorCodeAsyncRequired, "accepts_incomplete"},
		{"body not JSON", "hobby", nil, true, 400, "", "JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := instancePath(tc.id)
			if tc.async {
				path += "?accepts_incomplete=true"
			}
			var body any = tc.body
			if tc.body == nil {
				body = "nope"
			}
			r := c.do(http.MethodPatch, path, body).expect(t, tc.status)
			e := r.errBody(t)
			assert.Check(t, is.Equal(e.Error, tc.errorCode))
			assert.Check(t, is.Contains(e.Description, tc.desc))
		})
	}
	assert.Check(t, is.DeepEqual(b.Instances(), before), "a 4xx must leave the instance unchanged")
}

func TestUpdate_Sync_MergesParametersAndAnswers200(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, map[string]any{"version": "15"})).expect(t, http.StatusCreated)
	patch := map[string]any{"service_id": DemoPostgresServiceID, "parameters": map[string]any{"storage_gb": 3}}
	c.do(http.MethodPatch, instancePath("i1")+"?accepts_incomplete=true", patch).expect(t, http.StatusOK)
	inst, _ := b.Instance("i1")
	assert.Check(t, is.DeepEqual(inst.Parameters, map[string]any{"version": "15", "storage_gb": float64(3)}))

	t.Run("the same PATCH again is a no-op answered 200", func(t *testing.T) {
		r := c.do(http.MethodPatch, instancePath("i1")+"?accepts_incomplete=true", patch).expect(t, http.StatusOK)
		assert.Equal(t, strings.TrimSpace(string(r.body)), "{}")
	})
	t.Run("a PATCH without plan or parameters changes nothing", func(t *testing.T) {
		c.do(http.MethodPatch, instancePath("i1"), map[string]any{"service_id": DemoPostgresServiceID}).expect(t, http.StatusOK)
		after, _ := b.Instance("i1")
		assert.Check(t, is.DeepEqual(after.Parameters, inst.Parameters))
		assert.Check(t, is.Equal(after.PlanID, DemoPostgresHobbyPlanID))
	})
}

func TestUpdate_AsyncPlanChange_ResendGets202_OtherChangesGetConcurrencyError(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 300 * 1e6 })
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	patch := map[string]any{"service_id": DemoPostgresServiceID, "plan_id": DemoPostgresStandardPlanID,
		"parameters": map[string]any{"storage_gb": 30}, "previous_values": map[string]any{"plan_id": DemoPostgresHobbyPlanID}}
	path := instancePath("i1") + "?accepts_incomplete=true"
	var resp osb.UpdateResponse
	c.do(http.MethodPatch, path, patch).expect(t, http.StatusAccepted).decode(t, &resp)
	assert.Assert(t, resp.Operation != "")

	t.Run("re-sent PATCH gets 202 with the same operation", func(t *testing.T) {
		var again osb.UpdateResponse
		c.do(http.MethodPatch, path, patch).expect(t, http.StatusAccepted).decode(t, &again)
		assert.Equal(t, again.Operation, resp.Operation)
	})
	t.Run("plan is unchanged until the update succeeds", func(t *testing.T) {
		inst, _ := b.Instance("i1")
		assert.Check(t, is.Equal(inst.PlanID, DemoPostgresHobbyPlanID))
		assert.Check(t, is.Equal(inst.State, InstanceUpdating))
	})
	blocked := []struct {
		name, method, path string
		body               any
	}{
		{"different PATCH", http.MethodPatch, path, map[string]any{"service_id": DemoPostgresServiceID, "parameters": map[string]any{"storage_gb": 40}}},
		{"bind", http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)},
		{"deprovision", http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, true), nil},
	}
	for _, tc := range blocked {
		t.Run(tc.name+" while updating gets 422 ConcurrencyError", func(t *testing.T) {
			r := c.do(tc.method, tc.path, tc.body).expect(t, http.StatusUnprocessableEntity)
			assert.Check(t, is.Equal(r.errBody(t).Error, osb.ErrorCodeConcurrencyError))
		})
	}
	t.Run("polling with the pre-update plan reaches succeeded and applies the change", func(t *testing.T) {
		_, lo := c.pollUntilDone(lastOpPath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, resp.Operation))
		assert.Check(t, is.Equal(lo.State, osb.StateSucceeded))
		inst, _ := b.Instance("i1")
		assert.Check(t, is.Equal(inst.PlanID, DemoPostgresStandardPlanID))
		assert.Check(t, is.Equal(inst.MaintenanceInfo.Version, "2.1.0"))
		assert.Check(t, is.Equal(inst.Parameters["storage_gb"], float64(30)))
	})
	assert.Check(t, is.Len(b.Violations(), 0), "%v", b.Violations())

	t.Run("polling with the new plan is recorded as a violation", func(t *testing.T) {
		c.do(http.MethodGet, lastOpPath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, resp.Operation), nil).expect(t, http.StatusOK)
		assert.Assert(t, is.Len(b.Violations(), 1))
		assert.Check(t, is.Contains(b.Violations()[0], "old plan"))
	})
}

func TestDeprovision_BadRequests(t *testing.T) {
	b, c := startBroker(t)
	pg, hobby := DemoPostgresServiceID, DemoPostgresHobbyPlanID
	c.provisionSync("i1", pg, hobby)
	c.do(http.MethodPut, instancePath("archive"), provisionBody(DemoObjectStorageServiceID, DemoObjectStorageArchivePlanID, nil)).expect(t, http.StatusCreated)
	tests := []struct {
		name, path string
		status     int
		errorCode  string
	}{
		{"missing service_id", instancePath("i1") + "?plan_id=" + hobby, 400, ""},
		{"missing plan_id", instancePath("i1") + "?service_id=" + pg, 400, ""},
		{"no query at all", instancePath("i1"), 400, ""},
		{"unknown instance", deletePath(instancePath("nope"), pg, hobby, true), 410, ""},
		{"async-only deprovision without accepts_incomplete", deletePath(instancePath("archive"), DemoObjectStorageServiceID, DemoObjectStorageArchivePlanID, false), 422, osb.ErrorCodeAsyncRequired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(http.MethodDelete, tc.path, nil).expect(t, tc.status)
			assert.Check(t, is.Equal(r.errBody(t).Error, tc.errorCode))
		})
	}
	assert.Check(t, is.Len(b.Instances(), 2))
}

func TestDeprovision_Sync_Answers200ThenGone410(t *testing.T) {
	b, c := startBroker(t)
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	path := deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, true)
	r := c.do(http.MethodDelete, path, nil).expect(t, http.StatusOK)
	assert.Equal(t, strings.TrimSpace(string(r.body)), "{}")
	c.do(http.MethodDelete, path, nil).expect(t, http.StatusGone)
	c.do(http.MethodGet, lastOpPath(instancePath("i1"), "", "", ""), nil).expect(t, http.StatusGone)
	assert.Check(t, is.Len(b.Instances(), 0))
}

func TestDeprovision_Async_LastOperationAnswers410WhenFinished(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoObjectStorageServiceID, DemoObjectStorageArchivePlanID, nil)).expect(t, http.StatusCreated)
	path := deletePath(instancePath("i1"), DemoObjectStorageServiceID, DemoObjectStorageArchivePlanID, true)
	var resp osb.DeprovisionResponse
	c.do(http.MethodDelete, path, nil).expect(t, http.StatusAccepted).decode(t, &resp)
	assert.Assert(t, resp.Operation != "")
	var again osb.DeprovisionResponse
	c.do(http.MethodDelete, path, nil).expect(t, http.StatusAccepted).decode(t, &again)
	assert.Check(t, is.Equal(again.Operation, resp.Operation), "a re-sent DELETE gets the running operation")

	r, _ := c.pollUntilDone(lastOpPath(instancePath("i1"), DemoObjectStorageServiceID, DemoObjectStorageArchivePlanID, resp.Operation))
	r.expect(t, http.StatusGone)
	assert.Check(t, is.Len(b.Instances(), 0))
}

func TestDeprovision_WithBindingsLeft_DeletesThemAndRecordsAViolation(t *testing.T) {
	b, c := startBroker(t)
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, http.StatusCreated)
	c.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, true), nil).expect(t, http.StatusOK)
	assert.Check(t, is.Len(b.Bindings(), 0))
	assert.Assert(t, is.Len(b.Violations(), 1))
	assert.Check(t, is.Contains(b.Violations()[0], "unbind first"))
}

func TestDeprovision_DuringAsyncProvision(t *testing.T) {
	t.Run("answers 422 ConcurrencyError by default", func(t *testing.T) {
		b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 5 * 1e9 })
		c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, http.StatusAccepted)
		r := c.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, true), nil).expect(t, http.StatusUnprocessableEntity)
		assert.Check(t, is.Equal(r.errBody(t).Error, osb.ErrorCodeConcurrencyError))
		inst, _ := b.Instance("i1")
		assert.Check(t, is.Equal(inst.State, InstanceProvisioning))
	})
	t.Run("halts the provision when the plan says so", func(t *testing.T) {
		b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 5 * 1e9 })
		pb := DefaultCatalog().Behaviours[DemoPostgresStandardPlanID]
		pb.HaltProvisionOnDelete = true
		assert.NilError(t, b.SetPlanBehaviour(DemoPostgresStandardPlanID, pb))
		var prov osb.ProvisionResponse
		c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, http.StatusAccepted).decode(t, &prov)
		var del osb.DeprovisionResponse
		c.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, true), nil).expect(t, http.StatusAccepted).decode(t, &del)
		assert.Check(t, del.Operation != prov.Operation)
		var lo osb.LastOperationResponse
		c.do(http.MethodGet, lastOpPath(instancePath("i1"), "", "", del.Operation), nil).expect(t, http.StatusOK).decode(t, &lo)
		assert.Check(t, is.Equal(lo.State, osb.StateInProgress), "last_operation shows the delete")
	})
}

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

func TestRouting_UnknownPathAndMethod(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodGet, "/v2/nothing", nil).expect(t, http.StatusNotFound)
	r := c.do(http.MethodPost, "/v2/catalog", nil).expect(t, http.StatusMethodNotAllowed)
	assert.Check(t, is.Equal(r.header.Get("Allow"), "GET"))
	c.do(http.MethodPost, instancePath("i1"), nil).expect(t, http.StatusMethodNotAllowed)
}

func TestIDs_WithReservedCharacters_ArePercentDecoded(t *testing.T) {
	b, c := startBroker(t)
	id := "weird id/with slash"
	c.provisionSync(id, DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	_, ok := b.Instance(id)
	assert.Check(t, ok)
}
