package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// A broker answer with a field over its documented limit (osb.OversizedAnswer) is a
// malformed answer: the outcome is stored (a created resource mitigated, the call retried
// with backoff), never an outcome too large to store whose call is re-sent forever.
func TestProvision_AnOversizedDashboardURL_IsABrokerErrorWithBackoff(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		return &osb.ProvisionResponse{StatusCode: 201, DashboardURL: "https://d.example/" + strings.Repeat("x", 1_100_000)}, nil
	})

	f.step("db")

	inst := f.get("db")
	assert.Assert(t, inst.Status.Provisioned == nil)
	assert.Assert(t, inst.Status.OrphanMitigation != nil, "the broker may hold what a malformed 201 created")
	assert.Check(t, is.Contains(condition(inst, v1alpha1.ConditionReady).Message, "dashboard_url is 1100018 bytes, over the limit of 4096"))
	assert.Assert(t, inst.Status.Retry != nil)

	f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 200}, nil)
	f.step("db") // the mitigating DELETE
	first := f.get("db").Status.Retry
	assert.Assert(t, first != nil && first.NextRetryAt.After(f.now), "the provision waits before it is sent again")
	f.advance(time.Hour)
	f.step("db") // the PUT, answered the same
	f.step("db") // its mitigation
	again := f.get("db").Status.Retry
	assert.Assert(t, again.Attempts > first.Attempts, "attempts %d then %d", first.Attempts, again.Attempts)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 2)
}

func TestBind_OversizedEndpoints_AreABrokerError(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("app", nil)
	many := make([]osb.Endpoint, 20_000)
	for i := range many {
		many[i] = osb.Endpoint{Host: "db.example", Ports: []string{"5432"}}
	}
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}, Endpoints: many}, nil)

	f.stepBinding("app")

	b := f.getBinding("app")
	assert.Assert(t, b.Status.Bound == nil)
	assert.Assert(t, b.Status.OrphanMitigation != nil)
	assert.Check(t, is.Contains(condition2(b, v1alpha1.ConditionReady).Message, "endpoints and volume_mounts are"))
}

// TestStepBinding_AnswerFieldsThatMayHoldSecrets_GoToTheSecretOnly: a syslog drain
// or route service URL may carry a token, a volume mount's mount_config a password;
// the record keeps only that they exist and the mount's non-secret facts.
func TestStepBinding_AnswerFieldsThatMayHoldSecrets_GoToTheSecretOnly(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.broker.BindReturns(&osb.BindResponse{
		StatusCode:      201,
		Credentials:     map[string]any{"user": "app"},
		SyslogDrainURL:  "syslog-tls://app:" + secretValue + "@logs.example:6514",
		RouteServiceURL: "https://route.example/?token=" + secretValue,
		VolumeMounts: []osb.VolumeMount{{Driver: "nfs", ContainerDir: "/data", Mode: "rw", DeviceType: "shared",
			Device: osb.VolumeMountDevice{VolumeID: "vol-1", MountConfig: map[string]any{"password": secretValue}}}},
	}, nil)
	f.createBinding("db", nil)

	res := f.stepBinding("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	f.assertNoSecretInRecords()
	data := f.secretData("db")
	assert.Equal(t, string(data["syslog_drain_url"]), "syslog-tls://app:"+secretValue+"@logs.example:6514")
	assert.Equal(t, string(data["route_service_url"]), "https://route.example/?token="+secretValue)
	assert.Equal(t, string(data["volume_mounts"]),
		`[{"container_dir":"/data","device":{"mount_config":{"password":"`+secretValue+`"},"volume_id":"vol-1"},"device_type":"shared","driver":"nfs","mode":"rw"}]`)
	assert.Equal(t, string(data["user"]), "app")
	bs := f.getBinding("db").Status.Bound
	assert.Assert(t, bs.SyslogDrain && bs.RouteService)
	assert.DeepEqual(t, bs.VolumeMounts, []v1alpha1.VolumeMount{{Driver: "nfs", ContainerDir: "/data", Mode: "rw", DeviceType: "shared",
		Device: v1alpha1.VolumeDevice{VolumeID: "vol-1"}}})
	assert.DeepEqual(t, f.getBinding("db").Status.Secret.Keys,
		[]string{"provider", "route_service_url", "syslog_drain_url", "type", "user", "volume_mounts"})
}
