package osb

import (
	"encoding/json"
	"net/http"
	"testing"

	"gotest.tools/v3/assert"
)

const fullCatalog = `{
  "services": [{
    "name": "db", "id": "svc-1", "description": "A database",
    "tags": ["sql"], "requires": ["syslog_drain", "volume_mount"],
    "bindable": true, "instances_retrievable": true, "bindings_retrievable": true,
    "allow_context_updates": true, "plan_updateable": true,
    "metadata": {"displayName": "DB", "imageUrl": "https://i", "longDescription": "long",
                 "providerDisplayName": "ACME", "documentationUrl": "https://doc", "supportUrl": "https://sup",
                 "somethingElse": {"nested": [1, 2]}},
    "dashboard_client": {"id": "dc", "secret": "dcs", "redirect_uri": "https://r"},
    "unknown_service_field": {"ignored": true},
    "plans": [{
      "id": "plan-1", "name": "small", "description": "Small",
      "metadata": {"bullets": ["1 GB", 7], "costs": [{"amount": {"usd": 9.5, "eur": "bad"}, "unit": "MONTHLY"}, "junk"], "displayName": "Small"},
      "free": false, "bindable": false, "binding_rotatable": true, "plan_updateable": false,
      "maximum_polling_duration": 3600,
      "maintenance_info": {"version": "2.1.0+build.1", "description": "OS update"},
      "schemas": {
        "service_instance": {
          "create": {"parameters": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"size": {"type": "integer"}}}},
          "update": {"parameters": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}}
        },
        "service_binding": {"create": {"parameters": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}}}
      },
      "unknown_plan_field": 1
    }, {
      "id": "plan-2", "name": "large", "description": "Large"
    }]
  }],
  "unknown_top_level": []
}`

func TestDecodeCatalog_EveryFieldOf2_17(t *testing.T) {
	c, err := DecodeCatalog([]byte(fullCatalog))
	assert.NilError(t, err)
	assert.NilError(t, c.Validate())

	svc := c.ServiceByID("svc-1")
	assert.Assert(t, svc != nil)
	assert.Equal(t, svc, c.ServiceByName("db"))
	assert.DeepEqual(t, svc.Tags, []string{"sql"})
	assert.DeepEqual(t, svc.Requires, []string{RequiresSyslogDrain, RequiresVolumeMount})
	assert.Assert(t, svc.Bindable && svc.InstancesRetrievable && svc.BindingsRetrievable && svc.AllowContextUpdates)
	assert.DeepEqual(t, svc.PlanUpdateable, ptr(true))
	assert.DeepEqual(t, svc.DashboardClient, &DashboardClient{ID: "dc", Secret: "dcs", RedirectURI: "https://r"})
	assert.DeepEqual(t, svc.ProfileMetadata(), ServiceMetadata{
		DisplayName: "DB", ImageURL: "https://i", LongDescription: "long", ProviderDisplayName: "ACME",
		DocumentationURL: "https://doc", SupportURL: "https://sup",
	})

	small := svc.PlanByID("plan-1")
	assert.Assert(t, small != nil)
	assert.Equal(t, small, svc.PlanByName("small"))
	assert.DeepEqual(t, small.Free, ptr(false))
	assert.Assert(t, !small.IsFree())
	assert.Assert(t, !small.EffectiveBindable(svc), "plan false overrides service true")
	assert.Assert(t, !small.EffectivePlanUpdateable(svc), "plan false overrides service true")
	assert.Assert(t, small.BindingRotatable)
	assert.Equal(t, small.MaxPollingDuration().String(), "1h0m0s")
	assert.DeepEqual(t, small.MaintenanceInfo, &MaintenanceInfo{Version: "2.1.0+build.1", Description: "OS update"})
	assert.DeepEqual(t, small.ProfileMetadata(), PlanMetadata{
		Bullets: []string{"1 GB"}, DisplayName: "Small",
		Costs: []PlanCost{{Amount: map[string]float64{"usd": 9.5}, Unit: "MONTHLY"}},
	})

	var schema map[string]any
	assert.NilError(t, json.Unmarshal(small.InstanceCreateSchema(), &schema))
	assert.Equal(t, schema["$schema"], "http://json-schema.org/draft-04/schema#")
	assert.Assert(t, small.InstanceUpdateSchema() != nil)
	assert.Assert(t, small.BindingCreateSchema(svc) == nil, "binding schema only counts for bindable plans")

	large := svc.PlanByID("plan-2")
	assert.Assert(t, large.IsFree(), "absent free means free")
	assert.Assert(t, large.EffectiveBindable(svc), "inherits service bindable")
	assert.Assert(t, large.EffectivePlanUpdateable(svc), "inherits service plan_updateable")
	assert.Equal(t, large.MaxPollingDuration(), 0*small.MaxPollingDuration())
	assert.Assert(t, large.InstanceCreateSchema() == nil && large.InstanceUpdateSchema() == nil && large.BindingCreateSchema(svc) == nil)
	assert.Assert(t, svc.PlanByID("nope") == nil && c.ServiceByID("nope") == nil)
}

func TestDecodeCatalog_EmptyServiceListIsValid(t *testing.T) {
	c, err := DecodeCatalog([]byte(`{"services":[]}`))
	assert.NilError(t, err)
	assert.Equal(t, len(c.Services), 0)

	c, err = DecodeCatalog([]byte(`{"services":null}`))
	assert.NilError(t, err)
	assert.Assert(t, c.Services != nil)
}

func TestBind_DecodesEveryResponseField(t *testing.T) {
	body := `{
	  "metadata": {"expires_at": "2026-05-01T10:00:00.0Z", "renew_before": "2026-04-30T10:00:00.0Z"},
	  "credentials": {"uri": "pg://x", "port": 5432, "nested": {"a": [1]}},
	  "syslog_drain_url": "syslog://d", "route_service_url": "https://route",
	  "volume_mounts": [{"driver": "nfs", "container_dir": "/data", "mode": "rw", "device_type": "shared",
	                     "device": {"volume_id": "v1", "mount_config": {"opt": "x"}}}],
	  "endpoints": [{"host": "db.internal", "ports": ["5432", "9000-9010"], "protocol": "tcp"}, {"host": "h", "ports": []}],
	  "unknown": "ignored"
	}`
	b := newFakeBroker(t, reply(http.StatusCreated, body))
	resp, err := newTestClient(t, b.URL).Bind(t.Context(), &BindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})
	assert.NilError(t, err)

	assert.DeepEqual(t, resp, &BindResponse{
		Metadata:        &BindingMetadata{ExpiresAt: "2026-05-01T10:00:00.0Z", RenewBefore: "2026-04-30T10:00:00.0Z"},
		Credentials:     map[string]any{"uri": "pg://x", "port": float64(5432), "nested": map[string]any{"a": []any{float64(1)}}},
		SyslogDrainURL:  "syslog://d",
		RouteServiceURL: "https://route",
		VolumeMounts: []VolumeMount{{Driver: "nfs", ContainerDir: "/data", Mode: VolumeModeReadWrite, DeviceType: DeviceTypeShared,
			Device: VolumeMountDevice{VolumeID: "v1", MountConfig: map[string]any{"opt": "x"}}}},
		Endpoints:  []Endpoint{{Host: "db.internal", Ports: []string{"5432", "9000-9010"}, Protocol: ProtocolTCP}, {Host: "h", Ports: []string{}}},
		StatusCode: http.StatusCreated,
	})
	expires, err := resp.Metadata.ExpiresAtTime()
	assert.NilError(t, err)
	renew, err := resp.Metadata.RenewBeforeTime()
	assert.NilError(t, err)
	assert.Assert(t, renew.Before(expires))
}

func TestGetBinding_DecodesParameters(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusOK, `{"credentials":{"a":"b"},"parameters":{"role":"ro"},"endpoints":[{"host":"h","ports":["1"]}]}`))
	resp, err := newTestClient(t, b.URL).GetBinding(t.Context(), &GetBindingRequest{InstanceID: "i", BindingID: "b"})
	assert.NilError(t, err)
	assert.Equal(t, string(resp.Parameters), `{"role":"ro"}`)
	assert.DeepEqual(t, resp.Credentials, map[string]any{"a": "b"})
}

func TestGetInstance_DecodesEveryField(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusOK, `{"service_id":"s","plan_id":"p","dashboard_url":"https://d",
		"parameters":{"size":1},"maintenance_info":{"version":"1.0.0"},"metadata":{"labels":{"a":"b","bad":1},"attributes":{"x":true}}}`))
	resp, err := newTestClient(t, b.URL).GetInstance(t.Context(), &GetInstanceRequest{InstanceID: "i"})
	assert.NilError(t, err)
	assert.Equal(t, resp.ServiceID, "s")
	assert.Equal(t, resp.PlanID, "p")
	assert.Equal(t, resp.DashboardURL, "https://d")
	assert.Equal(t, string(resp.Parameters), `{"size":1}`)
	assert.DeepEqual(t, resp.MaintenanceInfo, &MaintenanceInfo{Version: "1.0.0"})
	// Labels of the wrong type are ignored.
	assert.DeepEqual(t, resp.Metadata.StringLabels(), map[string]string{"a": "b"})
	assert.DeepEqual(t, resp.Metadata.Attributes, map[string]any{"x": true})
}

func TestProvision_AsyncAnswerKeepsDashboardAndOperation(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusAccepted, `{"dashboard_url":"https://dash","operation":"op-1","metadata":{"labels":{"tier":"gold"}}}`))
	resp, err := newTestClient(t, b.URL).Provision(t.Context(), &ProvisionRequest{InstanceID: "i", AcceptsIncomplete: true, ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "sp"})
	assert.NilError(t, err)
	assert.DeepEqual(t, resp, &ProvisionResponse{
		DashboardURL: "https://dash", Operation: "op-1", Metadata: &InstanceMetadata{Labels: map[string]any{"tier": "gold"}},
		StatusCode: http.StatusAccepted, Async: true,
	})
}

func TestLastOperation_DecodesUsableAndRepeatable(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusOK, `{"state":"failed","description":"disk full","instance_usable":false,"update_repeatable":false}`))
	resp, err := newTestClient(t, b.URL).LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i"})
	assert.NilError(t, err)
	assert.DeepEqual(t, resp, &LastOperationResponse{State: StateFailed, Description: "disk full", InstanceUsable: ptr(false), UpdateRepeatable: ptr(false)})
}

func TestDecodeErrorBody_IsLenient(t *testing.T) {
	tests := []struct {
		name string
		body string
		want ErrorResponse
	}{
		{"empty", ``, ErrorResponse{}},
		{"html", `<html>`, ErrorResponse{}},
		{"array", `[1]`, ErrorResponse{}},
		{"full", `{"error":"E","description":"d","instance_usable":false,"update_repeatable":true}`,
			ErrorResponse{Error: "E", Description: "d", InstanceUsable: ptr(false), UpdateRepeatable: ptr(true)}},
		{"wrong types keep the good fields", `{"error":1,"description":"d","instance_usable":"no","update_repeatable":null}`,
			ErrorResponse{Description: "d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, DecodeErrorBody([]byte(tc.body)), tc.want)
		})
	}
}

func TestDecodeLastOperation_RequiresAKnownState(t *testing.T) {
	for _, state := range []LastOperationState{StateInProgress, StateSucceeded, StateFailed} {
		lo, err := DecodeLastOperation([]byte(`{"state":"` + string(state) + `","extra":1}`))
		assert.NilError(t, err)
		assert.Equal(t, lo.State, state)
	}
	for _, body := range []string{`{}`, `{"state":"In Progress"}`, `{"state":null}`, `null`, ``} {
		_, err := DecodeLastOperation([]byte(body))
		assert.Assert(t, err != nil, "body %q", body)
	}
}
