package broker

import (
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

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
