package engine

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

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
