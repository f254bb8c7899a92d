package osb

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestPlan_EffectiveBindableAndPlanUpdateable(t *testing.T) {
	tests := []struct {
		name               string
		svcBindable        bool
		svcUpdateable      *bool
		planBindable       *bool
		planUpdateable     *bool
		wantBindable       bool
		wantPlanUpdateable bool
	}{
		{name: "inherit service true", svcBindable: true, svcUpdateable: ptr(true), wantBindable: true, wantPlanUpdateable: true},
		{name: "inherit service false", svcBindable: false, svcUpdateable: ptr(false)},
		{name: "service silent on plan_updateable means false", svcBindable: true, wantBindable: true},
		{name: "plan true overrides service false", planBindable: ptr(true), planUpdateable: ptr(true), svcUpdateable: ptr(false), wantBindable: true, wantPlanUpdateable: true},
		{name: "plan false overrides service true", svcBindable: true, svcUpdateable: ptr(true), planBindable: ptr(false), planUpdateable: ptr(false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := &Service{Bindable: tc.svcBindable, PlanUpdateable: tc.svcUpdateable}
			plan := &Plan{Bindable: tc.planBindable, PlanUpdateable: tc.planUpdateable}
			assert.Equal(t, plan.EffectiveBindable(svc), tc.wantBindable)
			assert.Equal(t, plan.EffectivePlanUpdateable(svc), tc.wantPlanUpdateable)
		})
	}
	assert.Assert(t, !(&Plan{}).EffectiveBindable(nil), "no service, no default")
}

func TestPlan_FreeDefaultsToTrueAndPollingDurationToNone(t *testing.T) {
	assert.Assert(t, (&Plan{}).IsFree())
	assert.Assert(t, (&Plan{Free: ptr(true)}).IsFree())
	assert.Assert(t, !(&Plan{Free: ptr(false)}).IsFree())
	assert.Equal(t, (&Plan{MaximumPollingDuration: ptr(-1)}).MaxPollingDuration().String(), "0s")
	assert.Equal(t, (&Plan{MaximumPollingDuration: ptr(90)}).MaxPollingDuration().String(), "1m30s")
}

func TestCatalogValidate_ReportsEveryStructuralProblem(t *testing.T) {
	c := &CatalogResponse{Services: []Service{
		{ID: "s1", Name: "db", Plans: []Plan{{ID: "p1", Name: "a"}, {ID: "p1", Name: "a"}, {MaintenanceInfo: &MaintenanceInfo{}}}},
		{ID: "s1", Name: "db"},
		{},
	}}
	err := c.Validate()
	for _, want := range []string{
		`service 0 ("db") plan 1 ("a") repeats id "p1"`,
		`service 0 ("db") plan 1 ("a") repeats name "a"`,
		`service 0 ("db") plan 2 ("") has no id`,
		`plan 2 ("") has maintenance_info without a version`,
		`service 1 ("db") repeats id "s1"`,
		`service 1 ("db") repeats name "db"`,
		`service 1 ("db") has no plans`,
		`service 2 ("") has no id`,
		`service 2 ("") has no name`,
	} {
		assert.Assert(t, is.ErrorContains(err, want))
	}
	assert.NilError(t, (&CatalogResponse{}).Validate())
}

func TestBindingMetadata_Times(t *testing.T) {
	var none *BindingMetadata
	at, err := none.ExpiresAtTime()
	assert.NilError(t, err)
	assert.Assert(t, at.IsZero())

	m := &BindingMetadata{ExpiresAt: "2026-01-02T03:04:05.6Z", RenewBefore: "yesterday"}
	at, err = m.ExpiresAtTime()
	assert.NilError(t, err)
	assert.Equal(t, at.Format("2006-01-02T15:04:05.0Z07:00"), "2026-01-02T03:04:05.6Z")
	_, err = m.RenewBeforeTime()
	assert.ErrorContains(t, err, `renew_before "yesterday" is not an ISO 8601 timestamp`)
}

func TestInstanceMetadata_StringLabelsOfNilIsNil(t *testing.T) {
	var m *InstanceMetadata
	assert.Assert(t, m.StringLabels() == nil)
}
