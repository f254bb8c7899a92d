package broker

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestDefaultCatalog_CoversTheDemoFeatures(t *testing.T) {
	c := DefaultCatalog()
	idx, err := indexCatalog(c)
	assert.NilError(t, err)

	has := map[string]bool{}
	for _, info := range idx.plans {
		p, pb := info.plan, info.behaviour
		free := p.Free == nil || *p.Free
		has["free"] = has["free"] || free
		has["paid with costs"] = has["paid with costs"] || (!free && p.Metadata["costs"] != nil)
		has["bindable"] = has["bindable"] || info.bindable()
		has["not bindable"] = has["not bindable"] || !info.bindable()
		has["plan_updateable"] = has["plan_updateable"] || info.planUpdateable()
		has["not plan_updateable"] = has["not plan_updateable"] || !info.planUpdateable()
		has["async provision taking seconds"] = has["async provision taking seconds"] || (pb.isAsync(OpProvision) && time.Duration(pb.AsyncDelay) >= time.Second)
		has["async bind, bindings_retrievable"] = has["async bind, bindings_retrievable"] || (pb.isAsync(OpBind) && info.service.BindingsRetrievable)
		has["maximum_polling_duration"] = has["maximum_polling_duration"] || p.MaximumPollingDuration != nil
		has["binding_rotatable"] = has["binding_rotatable"] || p.BindingRotatable
		has["maintenance_info"] = has["maintenance_info"] || p.MaintenanceInfo != nil
		has["requires app"] = has["requires app"] || pb.RequiresApp
		has["binding expiry"] = has["binding expiry"] || pb.BindingTTL > 0
		for _, s := range []*paramSchema{info.create, info.update, info.bind} {
			if s == nil {
				continue
			}
			draft, _ := s.source["$schema"].(string)
			has["draft-04 schema"] = has["draft-04 schema"] || strings.Contains(draft, "draft-04")
			has["draft 2019/2020 schema"] = has["draft 2019/2020 schema"] || strings.Contains(draft, "/draft/20")
			raw, _ := json.Marshal(s.source)
			has["schema defaults"] = has["schema defaults"] || strings.Contains(string(raw), `"default"`)
			has["schema enums"] = has["schema enums"] || strings.Contains(string(raw), `"enum"`)
		}
		has["update schema"] = has["update schema"] || info.update != nil
		has["bind schema"] = has["bind schema"] || info.bind != nil
	}
	for _, want := range []string{"free", "paid with costs", "bindable", "not bindable", "plan_updateable", "not plan_updateable",
		"async provision taking seconds", "async bind, bindings_retrievable", "maximum_polling_duration", "binding_rotatable",
		"maintenance_info", "requires app", "binding expiry", "draft-04 schema", "draft 2019/2020 schema", "schema defaults",
		"schema enums", "update schema", "bind schema"} {
		assert.Check(t, has[want], "the demo catalog has no %s plan", want)
	}
	for _, id := range []string{DemoPostgresHobbyPlanID, DemoPostgresStandardPlanID, DemoPostgresHAPlanID, DemoRedisSmallPlanID,
		DemoRedisLargePlanID, DemoObjectStorageBucketPlanID, DemoObjectStorageArchivePlanID, DemoLogDrainPlanID} {
		assert.Check(t, idx.plan(id) != nil, "demo plan id %s", id)
	}
}

func TestParseCatalog_RejectsInvalidCatalogsWithAReason(t *testing.T) {
	const plan = `{name: p, id: p1, description: d}`
	tests := []struct {
		name, doc, want string
	}{
		{"not YAML", "services: [", "not valid YAML"},
		{"service without name", `services: [{id: s1, description: d, bindable: true, plans: [` + plan + `]}]`, "name, id and description are required"},
		{"service without plans", `services: [{name: s, id: s1, description: d, bindable: true, plans: []}]`, "at least one plan"},
		{"duplicate service id", `services: [{name: a, id: s1, description: d, bindable: true, plans: [` + plan + `]}, {name: b, id: s1, description: d, bindable: true, plans: [{name: q, id: p2, description: d}]}]`, "used by another service"},
		{"duplicate plan id", `services: [{name: a, id: s1, description: d, bindable: true, plans: [` + plan + `, {name: q, id: p1, description: d}]}]`, "used by another plan"},
		{"duplicate plan name", `services: [{name: a, id: s1, description: d, bindable: true, plans: [` + plan + `, {name: p, id: p2, description: d}]}]`, "name is used by another plan"},
		{"maintenance_info not semver", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, maintenance_info: {version: "1.0"}}]}]`, "SemVer"},
		{"schema without $schema", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, schemas: {service_instance: {create: {parameters: {type: object}}}}}]}]`, `"$schema"`},
		{"schema with a remote $ref", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, schemas: {service_instance: {create: {parameters: {$schema: "http://json-schema.org/draft-04/schema#", $ref: "https://example.com/s.json"}}}}}]}]`, "not allowed"},
		{"async bind without bindings_retrievable", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, x-test-broker: {async: [bind]}}]}]`, "bindings_retrievable"},
		{"async catalog", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, x-test-broker: {async: [catalog]}}]}]`, "cannot be asynchronous"},
		{"misspelt behaviour field", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, x-test-broker: {asyncc: [provision]}}]}]`, "unknown field"},
		{"bad duration", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, x-test-broker: {async_delay: soon}}]}]`, "invalid duration"},
		{"requires_app on a plan that is not bindable", `services: [{name: a, id: s1, description: d, bindable: false, plans: [{name: p, id: p1, description: d, x-test-broker: {requires_app: true}}]}]`, "not bindable"},
		{"renew_before longer than binding_ttl", `services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, x-test-broker: {binding_ttl: 1h, renew_before: 2h}}]}]`, "longer than binding_ttl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCatalog([]byte(tc.doc))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestParseCatalog_AcceptsNumbersOfSecondsAsDurations(t *testing.T) {
	c, err := ParseCatalog([]byte(`services: [{name: a, id: s1, description: d, bindable: true, plans: [{name: p, id: p1, description: d, x-test-broker: {async: [provision], async_delay: 1.5}}]}]`))
	assert.NilError(t, err)
	assert.Equal(t, time.Duration(c.Behaviours["p1"].AsyncDelay), 1500*time.Millisecond)
}

func TestCatalog_JSONRoundTripKeepsBehaviours(t *testing.T) {
	c := DefaultCatalog()
	data, err := json.Marshal(c)
	assert.NilError(t, err)
	back, err := ParseCatalog(data)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(back.Behaviours, c.Behaviours))
	assert.Check(t, is.Len(back.Services, len(c.Services)))
}

func TestLoadCatalogFile_ReadsYAMLAndJSON(t *testing.T) {
	dir := t.TempDir()
	js, err := json.Marshal(DefaultCatalog())
	assert.NilError(t, err)
	files := map[string][]byte{"catalog.yaml": DefaultCatalogYAML(), "catalog.json": js}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			assert.NilError(t, os.WriteFile(path, data, 0o600))
			c, err := LoadCatalogFile(path)
			assert.NilError(t, err)
			assert.Check(t, is.Len(c.Services, 4))
		})
	}
	_, err = LoadCatalogFile(filepath.Join(dir, "missing.yaml"))
	assert.ErrorContains(t, err, "reading catalog")
}

func TestGenerateCatalog_IsValidDeterministicAndServable(t *testing.T) {
	c := GenerateCatalog(20, 10)
	assert.Check(t, is.Len(c.Services, 20))
	plans := 0
	for _, s := range c.Services {
		plans += len(s.Plans)
		for _, p := range s.Plans {
			assert.Assert(t, p.Schemas != nil && p.Schemas.ServiceInstance.Create != nil && p.Schemas.ServiceInstance.Update != nil && p.Schemas.ServiceBinding.Create != nil)
		}
	}
	assert.Check(t, is.Equal(plans, 200))
	_, err := indexCatalog(c)
	assert.NilError(t, err)
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(GenerateCatalog(20, 10))
	assert.Check(t, string(a) == string(b), "the generator is deterministic")

	_, client := startBroker(t, func(o *Options) { o.Catalog = &c })
	var served osb.CatalogResponse
	client.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK).decode(t, &served)
	assert.Check(t, is.Len(served.Services, 20))
	svc := c.Services[1]
	client.do(http.MethodPut, instancePath("gen"), provisionBody(svc.ID, svc.Plans[0].ID, map[string]any{"size": "huge"})).expect(t, http.StatusBadRequest)
	client.do(http.MethodPut, instancePath("gen"), provisionBody(svc.ID, svc.Plans[0].ID, map[string]any{"size": "large"})).expect(t, http.StatusCreated)
}

func TestReplaceCatalog_ChangesWhatIsServedAndKeepsInstances(t *testing.T) {
	b, c := startBroker(t)
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	before := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)

	smaller := DefaultCatalog()
	smaller.Services = smaller.Services[1:] // drop postgresql
	for _, id := range []string{DemoPostgresHobbyPlanID, DemoPostgresStandardPlanID, DemoPostgresHAPlanID} {
		delete(smaller.Behaviours, id)
	}
	smaller.Services[0].Description = "Changed description"
	assert.NilError(t, b.ReplaceCatalog(smaller))

	after := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	var cat osb.CatalogResponse
	after.decode(t, &cat)
	assert.Check(t, is.Len(cat.Services, 3))
	assert.Check(t, is.Equal(cat.Services[0].Description, "Changed description"))
	assert.Check(t, before.header.Get("ETag") != after.header.Get("ETag"))

	c.do(http.MethodPut, instancePath("i2"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, http.StatusBadRequest)
	c.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, true), nil).expect(t, http.StatusOK)

	t.Run("an invalid catalog is refused and the old one stays", func(t *testing.T) {
		bad := smaller
		bad.Behaviours = map[string]PlanBehaviour{"nope": {}}
		assert.ErrorContains(t, b.ReplaceCatalog(bad), "no such plan")
		assert.Check(t, is.Len(b.Catalog().Services, 3))
	})
	t.Run("reset restores the initial catalog", func(t *testing.T) {
		b.Reset()
		assert.Check(t, is.Len(b.Catalog().Services, 4))
	})
}

func TestSetAsyncDelay_AppliesToOperationsStartedAfterwards(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 0 })
	b.SetAsyncDelay(time.Hour)
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("slow")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202).decode(t, &prov)
	inst, _ := b.Instance("slow")
	assert.Check(t, inst.LastOperation.DoneAt.Sub(inst.LastOperation.StartedAt) == time.Hour)
	b.SetAsyncDelay(0)
	c.do(http.MethodPut, instancePath("plan")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202)
	inst, _ = b.Instance("plan")
	assert.Check(t, inst.LastOperation.DoneAt.Sub(inst.LastOperation.StartedAt) == 3*time.Second, "the plan's async_delay")
}

func TestFinishOperations_CompletesWhatIsInProgress(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = time.Hour })
	c.do(http.MethodPut, instancePath("held")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202)
	inst, _ := b.Instance("held")
	assert.Check(t, is.Equal(inst.LastOperation.State, osb.StateInProgress))
	b.FinishOperations()
	inst, _ = b.Instance("held")
	assert.Check(t, is.Equal(inst.LastOperation.State, osb.StateSucceeded))
	assert.Check(t, is.Equal(inst.State, InstanceReady))
}

func TestDashboard_ShowsTheInstance(t *testing.T) {
	_, c := startBroker(t)
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, 201).decode(t, &prov)
	resp, err := http.Get(prov.DashboardURL)
	assert.NilError(t, err)
	defer resp.Body.Close()
	assert.Check(t, is.Equal(resp.StatusCode, http.StatusOK))
}

func TestPairedCatalog_AnUpdateMustSendFooAndBarTogether(t *testing.T) {
	for _, plan := range []string{PairedBothPlanID, PairedBothAsyncPlanID} {
		t.Run(plan, func(t *testing.T) {
			cat := PairedCatalog()
			_, c := startBroker(t, func(o *Options) { o.Catalog = &cat })
			path := instancePath("i1") + "?accepts_incomplete=true"
			r := c.do(http.MethodPut, path, provisionBody(PairedServiceID, plan, map[string]any{"foo": "f1"}))
			r.expect(t, http.StatusBadRequest)
			assert.Check(t, strings.Contains(r.errBody(t).Description, "bar"), "%s", r.body)
			r = c.do(http.MethodPut, path, provisionBody(PairedServiceID, plan, map[string]any{"foo": "f1", "bar": "b1"}))
			assert.Assert(t, r.status == http.StatusCreated || r.status == http.StatusAccepted, "%s", r.body)
			if r.status == http.StatusAccepted {
				var resp osb.ProvisionResponse
				r.decode(t, &resp)
				c.pollUntilDone(lastOpPath(instancePath("i1"), PairedServiceID, plan, resp.Operation))
			}

			r = c.do(http.MethodPatch, path, map[string]any{"service_id": PairedServiceID, "parameters": map[string]any{"foo": "f2"}})
			r.expect(t, http.StatusBadRequest)
			assert.Check(t, strings.Contains(r.errBody(t).Description, "bar"), "%s", r.body)
			r = c.do(http.MethodPatch, path, map[string]any{"service_id": PairedServiceID})
			assert.Check(t, r.status == http.StatusOK, "an update without parameters keeps them: %s", r.body)
			r = c.do(http.MethodPatch, path, map[string]any{"service_id": PairedServiceID, "parameters": map[string]any{"foo": "f2", "bar": "b1"}})
			assert.Assert(t, r.status == http.StatusOK || r.status == http.StatusAccepted, "%s", r.body)
		})
	}
}
