package broker

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestFault_Respond_StrikesTimesThenRecovers(t *testing.T) {
	b, c := startBroker(t)
	mustInject(t, b, Fault{Op: OpCatalog, Action: ActionRespond, Times: 2, Status: 503, Description: "catalog is warming up"})
	for i := range 2 {
		r := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusServiceUnavailable)
		assert.Check(t, is.Equal(r.errBody(t).Description, "catalog is warming up"), "strike %d", i)
	}
	c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	assert.Check(t, is.Len(b.Faults(), 0), "a spent fault is gone")
}

func TestFault_Respond_CarriesErrorCodeAndFailureFlags(t *testing.T) {
	b, c := startBroker(t)
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	mustInject(t, b, Fault{Op: OpUpdate, Action: ActionRespond, Status: 422, Error: osb.ErrorCodeConcurrencyError,
		Description: "busy", InstanceUsable: boolPtr(false), UpdateRepeatable: boolPtr(false)})
	r := c.do(http.MethodPatch, instancePath("i1"), map[string]any{"service_id": DemoPostgresServiceID}).expect(t, 422)
	e := r.errBody(t)
	assert.Check(t, is.Equal(e.Error, osb.ErrorCodeConcurrencyError))
	assert.Check(t, e.InstanceUsable != nil && !*e.InstanceUsable)
	assert.Check(t, e.UpdateRepeatable != nil && !*e.UpdateRepeatable)
}

func TestFault_Respond_RawBodyIsSentVerbatim(t *testing.T) {
	b, c := startBroker(t)
	mustInject(t, b, Fault{Op: OpCatalog, Action: ActionRespond, Status: 200, Body: `{"services":[],"x-unknown":{"deep":[1,2]}}`})
	r := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	assert.Equal(t, string(r.body), `{"services":[],"x-unknown":{"deep":[1,2]}}`)
}

func TestFault_BeforeVersusAfter_DecidesWhetherTheBrokerActed(t *testing.T) {
	tests := []struct {
		when       When
		wantExists bool
	}{
		{Before, false},
		{After, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.when), func(t *testing.T) {
			b, c := startBroker(t)
			mustInject(t, b, Fault{Op: OpProvision, When: tc.when, Action: ActionRespond, Status: 500})
			c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, 500)
			_, exists := b.Instance("i1")
			assert.Equal(t, exists, tc.wantExists)
			reqs := b.RequestsFor(OpProvision)
			assert.Check(t, is.Equal(reqs[0].Fault, "fault-1"))
		})
	}
}

func TestFault_AfterWithHeaderOnly_DecoratesTheRealAnswer(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = 2 * time.Second })
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202).decode(t, &prov)
	date := "Wed, 21 Oct 2015 07:28:00 GMT"
	mustInject(t, b, Fault{Op: OpLastOperation, When: After, Action: ActionRespond, Header: map[string]string{"Retry-After": date}})
	r := c.do(http.MethodGet, lastOpPath(instancePath("i1"), "", "", prov.Operation), nil).expect(t, http.StatusOK)
	assert.Check(t, is.Equal(r.header.Get("Retry-After"), date))
	var lo osb.LastOperationResponse
	r.decode(t, &lo)
	assert.Check(t, is.Equal(lo.State, osb.StateInProgress))
}

func TestFault_Matching_ByIDsAndPlan(t *testing.T) {
	tests := []struct {
		name    string
		fault   Fault
		strikes []bool // for requests to i1/b1 on hobby, i2/b2 on hobby, i3/b3 on bucket
	}{
		{"instance id", Fault{Op: OpBind, InstanceID: "i2"}, []bool{false, true, false}},
		{"binding id", Fault{Op: OpBind, BindingID: "b3"}, []bool{false, false, true}},
		{"plan id", Fault{Op: OpBind, PlanID: DemoObjectStorageBucketPlanID}, []bool{false, false, true}},
		{"any op", Fault{Op: OpAny, InstanceID: "i1"}, []bool{true, false, false}},
		{"other op", Fault{Op: OpUnbind}, []bool{false, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, c := startBroker(t)
			c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
			c.provisionSync("i2", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
			c.provisionSync("i3", DemoObjectStorageServiceID, DemoObjectStorageBucketPlanID)
			f := tc.fault
			f.Action, f.Status, f.Times = ActionRespond, 418, 10
			mustInject(t, b, f)
			targets := []struct{ inst, bind, svc, plan string }{
				{"i1", "b1", DemoPostgresServiceID, DemoPostgresHobbyPlanID},
				{"i2", "b2", DemoPostgresServiceID, DemoPostgresHobbyPlanID},
				{"i3", "b3", DemoObjectStorageServiceID, DemoObjectStorageBucketPlanID},
			}
			for i, tg := range targets {
				r := c.do(http.MethodPut, bindingPath(tg.inst, tg.bind), bindBody(tg.svc, tg.plan, nil))
				assert.Check(t, is.Equal(r.status == 418, tc.strikes[i]), "request %d answered %d", i, r.status)
			}
		})
	}
}

func TestFault_Delay_SlowsTheAnswerThenProceeds(t *testing.T) {
	b, c := startBroker(t)
	mustInject(t, b, Fault{Op: OpCatalog, Action: ActionDelay, Delay: Duration(150 * time.Millisecond)})
	start := time.Now()
	c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	assert.Check(t, time.Since(start) >= 150*time.Millisecond)
}

func TestFault_Hang_LastsUntilTheClientGivesUp(t *testing.T) {
	for _, when := range []When{Before, After} {
		t.Run(string(when), func(t *testing.T) {
			b, c := startBroker(t)
			mustInject(t, b, Fault{Op: OpProvision, When: when, Action: ActionHang})
			c.hc.Timeout = 200 * time.Millisecond
			resp, err := c.send(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil))
			if err == nil {
				resp.Body.Close()
			}
			assert.Check(t, err != nil, "the client must time out")
			_, exists := b.Instance("i1")
			assert.Check(t, is.Equal(exists, when == After), "after: the broker provisioned although the client saw no answer")
			waitFor(t, func() bool { return len(b.RequestsFor(OpProvision)) == 1 })
			assert.Check(t, is.Equal(b.RequestsFor(OpProvision)[0].Status, 0))
		})
	}
}

func TestFault_Malformed_SendsInvalidJSON(t *testing.T) {
	tests := []struct {
		when   When
		status int
	}{
		{Before, http.StatusOK},
		{After, http.StatusCreated},
	}
	for _, tc := range tests {
		t.Run(string(tc.when), func(t *testing.T) {
			b, c := startBroker(t)
			mustInject(t, b, Fault{Op: OpProvision, When: tc.when, Action: ActionMalformed})
			r := c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, tc.status)
			assert.Check(t, !json.Valid(r.body), "body %q must not be JSON", r.body)
		})
	}
}

func TestFault_Oversized_SendsAHugeValidBody(t *testing.T) {
	b, c := startBroker(t)
	mustInject(t, b, Fault{Op: OpCatalog, Action: ActionOversized, Size: 2 << 20})
	r := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	assert.Check(t, is.Len(r.body, 2<<20))
	assert.Check(t, json.Valid(r.body))
	assert.Check(t, len(b.Requests()[0].ResponseBody) < 1024, "the log keeps a truncated copy")
}

func TestFault_Close_DropsTheConnectionWithoutAnswer(t *testing.T) {
	for _, when := range []When{Before, After} {
		t.Run(string(when), func(t *testing.T) {
			b, c := startBroker(t)
			mustInject(t, b, Fault{Op: OpBind, When: when, Action: ActionClose})
			c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
			resp, err := c.send(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil))
			if err == nil {
				resp.Body.Close()
			}
			assert.Check(t, err != nil && (errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "reset")), "got %v", err)
			_, exists := b.Binding("b1")
			assert.Check(t, is.Equal(exists, when == After))
		})
	}
}

func TestFault_FailOperation_AsyncProvisionEndsFailedAndCanBeCleanedUp(t *testing.T) {
	b, c := startBroker(t)
	mustInject(t, b, Fault{Op: OpProvision, Action: ActionFailOperation, Description: "out of capacity"})
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202).decode(t, &prov)
	_, lo := c.pollUntilDone(lastOpPath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, prov.Operation))
	assert.Check(t, is.Equal(lo.State, osb.StateFailed))
	assert.Check(t, is.Equal(lo.Description, "out of capacity"))
	inst, _ := b.Instance("i1")
	assert.Check(t, is.Equal(inst.State, InstanceFailed))

	// Orphan mitigation: the platform deletes what failed.
	var del osb.DeprovisionResponse
	c.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, true), nil).expect(t, 202).decode(t, &del)
	r, _ := c.pollUntilDone(lastOpPath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresStandardPlanID, del.Operation))
	r.expect(t, http.StatusGone)
}

func TestFault_FailOperation_FailedUpdateLeavesInstanceUnchangedWithFlags(t *testing.T) {
	b, c := startBroker(t)
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202).decode(t, &prov)
	c.pollUntilDone(lastOpPath(instancePath("i1"), "", "", prov.Operation))
	mustInject(t, b, Fault{Op: OpUpdate, Action: ActionFailOperation, InstanceUsable: boolPtr(false), UpdateRepeatable: boolPtr(false)})
	var upd osb.UpdateResponse
	c.do(http.MethodPatch, instancePath("i1")+"?accepts_incomplete=true", map[string]any{"service_id": DemoPostgresServiceID, "parameters": map[string]any{"storage_gb": 100}}).expect(t, 202).decode(t, &upd)
	_, lo := c.pollUntilDone(lastOpPath(instancePath("i1"), "", "", upd.Operation))
	assert.Check(t, is.Equal(lo.State, osb.StateFailed))
	assert.Check(t, lo.InstanceUsable != nil && !*lo.InstanceUsable)
	assert.Check(t, lo.UpdateRepeatable != nil && !*lo.UpdateRepeatable)
	inst, _ := b.Instance("i1")
	assert.Check(t, is.Equal(inst.Parameters["storage_gb"], float64(20)), "a failed update changes nothing")
	assert.Check(t, !inst.Usable)
}

func TestFault_FailOperation_OnPollFailsTheRunningOperationAtOnce(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = time.Hour })
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202).decode(t, &prov)
	mustInject(t, b, Fault{Op: OpLastOperation, Action: ActionFailOperation})
	var lo osb.LastOperationResponse
	c.do(http.MethodGet, lastOpPath(instancePath("i1"), "", "", prov.Operation), nil).expect(t, 200).decode(t, &lo)
	assert.Check(t, is.Equal(lo.State, osb.StateFailed))
}

func TestFault_FailOperation_IgnoresSyncOperations(t *testing.T) {
	b, c := startBroker(t)
	mustInject(t, b, Fault{Op: OpProvision, Action: ActionFailOperation})
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	assert.Check(t, is.Len(b.Faults(), 1), "the fault waits for an async operation")
}

func TestFault_StickOperation_StaysInProgress(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = time.Millisecond })
	mustInject(t, b, Fault{Op: OpBind, Action: ActionStickOperation})
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresHAPlanID, nil)).expect(t, 202).decode(t, &prov)
	c.pollUntilDone(lastOpPath(instancePath("i1"), "", "", prov.Operation))
	var bind osb.BindResponse
	c.do(http.MethodPut, bindingPath("i1", "b1")+"?accepts_incomplete=true", bindBody(DemoPostgresServiceID, DemoPostgresHAPlanID, nil)).expect(t, 202).decode(t, &bind)
	time.Sleep(20 * time.Millisecond)
	for range 3 {
		var lo osb.LastOperationResponse
		c.do(http.MethodGet, lastOpPath(bindingPath("i1", "b1"), "", "", bind.Operation), nil).expect(t, 200).decode(t, &lo)
		assert.Check(t, is.Equal(lo.State, osb.StateInProgress))
	}
}

func TestFault_Gone_WhilePollingAnUnfinishedProvision(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.AsyncDelay = time.Hour })
	var prov osb.ProvisionResponse
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresStandardPlanID, nil)).expect(t, 202).decode(t, &prov)
	mustInject(t, b, Fault{Op: OpLastOperation, Action: ActionGone, Times: 2})
	path := lastOpPath(instancePath("i1"), "", "", prov.Operation)
	c.do(http.MethodGet, path, nil).expect(t, http.StatusGone)
	c.do(http.MethodGet, path, nil).expect(t, http.StatusGone)
	c.do(http.MethodGet, path, nil).expect(t, http.StatusOK)
	_, exists := b.Instance("i1")
	assert.Check(t, exists, "410 was only the answer")
}

func TestFault_DropState_SimulatesALostRecord(t *testing.T) {
	t.Run("before a poll: the instance is unknown", func(t *testing.T) {
		b, c := startBroker(t)
		c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
		mustInject(t, b, Fault{Op: OpLastOperation, Action: ActionDropState})
		c.do(http.MethodGet, lastOpPath(instancePath("i1"), "", "", ""), nil).expect(t, http.StatusNotFound)
		assert.Check(t, is.Len(b.Instances(), 0))
	})
	t.Run("before a deprovision: gone", func(t *testing.T) {
		b, c := startBroker(t)
		c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
		mustInject(t, b, Fault{Op: OpDeprovision, Action: ActionDropState})
		c.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, true), nil).expect(t, http.StatusGone)
	})
	t.Run("after a bind: answered 201 but forgotten", func(t *testing.T) {
		b, c := startBroker(t)
		c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
		mustInject(t, b, Fault{Op: OpBind, When: After, Action: ActionDropState})
		c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil)).expect(t, http.StatusCreated)
		_, exists := b.Binding("b1")
		assert.Check(t, !exists)
		_, instExists := b.Instance("i1")
		assert.Check(t, instExists, "dropping a binding keeps its instance")
	})
	t.Run("from Go", func(t *testing.T) {
		b, c := startBroker(t)
		c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
		assert.Check(t, b.Forget("i1"))
		assert.Check(t, !b.Forget("i1"))
	})
}

func TestFault_Invalid_IsRefusedWithAReason(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		want  string
	}{
		{"no op", Fault{Action: ActionHang}, "op is required"},
		{"unknown op", Fault{Op: "explode", Action: ActionHang}, "unknown op"},
		{"no action", Fault{Op: OpCatalog}, "action is required"},
		{"unknown action", Fault{Op: OpCatalog, Action: "explode"}, "unknown action"},
		{"respond before without status", Fault{Op: OpCatalog, Action: ActionRespond}, "needs a status"},
		{"delay without duration", Fault{Op: OpCatalog, Action: ActionDelay}, "positive delay"},
		{"bad when", Fault{Op: OpCatalog, Action: ActionHang, When: "later"}, "when must be"},
		{"fail on catalog", Fault{Op: OpCatalog, Action: ActionFailOperation}, "only applies"},
		{"negative times", Fault{Op: OpCatalog, Action: ActionHang, Times: -1}, "times"},
		{"bad status", Fault{Op: OpCatalog, Action: ActionRespond, Status: 42}, "not an HTTP status"},
	}
	b, _ := startBroker(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.InjectFault(tc.fault)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFault_Redirect_SendsTheCallToTheCatalog(t *testing.T) {
	b, c := startBroker(t)
	c.provisionSync("i1", DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	mustInject(t, b, Fault{Op: OpDeprovision, Action: ActionRedirect})
	noFollow := *c.hc
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	plain := *c
	plain.hc = &noFollow

	r := plain.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, true), nil).
		expect(t, http.StatusMovedPermanently)

	assert.Equal(t, r.header.Get("Location"), "/v2/catalog")
	_, exists := b.Instance("i1")
	assert.Assert(t, exists, "a redirect before the broker acts leaves the instance")

	// What net/http does with it when it follows: a GET of the catalog, 200.
	mustInject(t, b, Fault{Op: OpDeprovision, Action: ActionRedirect, Status: http.StatusSeeOther})
	c.do(http.MethodDelete, deletePath(instancePath("i1"), DemoPostgresServiceID, DemoPostgresHobbyPlanID, true), nil).
		expect(t, http.StatusOK)
	_, exists = b.Instance("i1")
	assert.Assert(t, exists)
	assert.Equal(t, len(b.RequestsFor(OpCatalog)), 1)
}

func TestFault_Redirect_NeedsA3xxStatus(t *testing.T) {
	b, _ := startBroker(t)
	_, err := b.InjectFault(Fault{Op: OpBind, Action: ActionRedirect, Status: 200})
	assert.ErrorContains(t, err, "needs a 3xx status")
}
