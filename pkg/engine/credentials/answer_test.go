package credentials_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestAnswerValues_PutsFieldsThatMayHoldSecretsBesideTheCredentials(t *testing.T) {
	mount := osb.VolumeMount{Driver: "nfs", ContainerDir: "/data", Mode: "rw", DeviceType: "shared",
		Device: osb.VolumeMountDevice{VolumeID: "vol-1", MountConfig: map[string]any{"password": secretValue}}}
	tests := []struct {
		name   string
		answer credentials.Answer
		want   map[string][]byte
	}{
		{name: "credentials alone are written as they are",
			answer: credentials.Answer{Credentials: map[string]any{"password": secretValue}},
			want:   map[string][]byte{"password": []byte(secretValue)}},
		{name: "syslog drain, route service and volume mounts get their keys",
			answer: credentials.Answer{
				Credentials:    map[string]any{"user": "app"},
				SyslogDrainURL: "syslog-tls://u:" + secretValue + "@logs:6514", RouteServiceURL: "https://route/?t=" + secretValue,
				VolumeMounts: []osb.VolumeMount{mount},
			},
			want: map[string][]byte{
				"user":              []byte("app"),
				"syslog_drain_url":  []byte("syslog-tls://u:" + secretValue + "@logs:6514"),
				"route_service_url": []byte("https://route/?t=" + secretValue),
				"volume_mounts": []byte(`[{"container_dir":"/data","device":{"mount_config":{"password":"` + secretValue +
					`"},"volume_id":"vol-1"},"device_type":"shared","driver":"nfs","mode":"rw"}]`),
			}},
		{name: "without credentials the other fields are still written",
			answer: credentials.Answer{SyslogDrainURL: "syslog://logs:514"},
			want:   map[string][]byte{"syslog_drain_url": []byte("syslog://logs:514")}},
		{name: "a credential of the same name wins",
			answer: credentials.Answer{Credentials: map[string]any{"syslog_drain_url": "from-credentials"}, SyslogDrainURL: "syslog://logs:514"},
			want:   map[string][]byte{"syslog_drain_url": []byte("from-credentials")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.answer.Credentials)

			data, err := credentials.Encode(tc.answer.Values())

			assert.NilError(t, err)
			assert.DeepEqual(t, data, tc.want)
			assert.Equal(t, len(tc.answer.Credentials), before, "the broker's credentials are not modified")
		})
	}
}

func TestAnswerValues_VolumeMountsAreReadableByJSONPath(t *testing.T) {
	a := credentials.Answer{VolumeMounts: []osb.VolumeMount{{Driver: "nfs", ContainerDir: "/data",
		Device: osb.VolumeMountDevice{VolumeID: "vol-1", MountConfig: map[string]any{"source": "nfs://x"}}}}}
	values := a.Values()
	data, err := credentials.Encode(values)
	assert.NilError(t, err)
	expr := "{.volume_mounts[0].device.mount_config.source}"

	got, err := credentials.Apply(t.Context(), data, values, []v1alpha1.SecretTransform{{AddKey: &v1alpha1.AddKeyTransform{Key: "source", JSONPathExpression: &expr}}}, nil)

	assert.NilError(t, err)
	assert.Equal(t, string(got["source"]), "nfs://x")
}
