package credentials

import (
	"encoding/json"
	"maps"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Secret keys of the fields of a bind answer, other than its credentials, that may hold
// secrets: a syslog drain or route service URL can carry a token or a password, a volume
// mount's mount_config the volume's credentials. They go to the Secret with the
// credentials; the binding record only says that they exist.
const (
	// KeySyslogDrainURL holds the answer's syslog_drain_url.
	KeySyslogDrainURL = "syslog_drain_url"
	// KeyRouteServiceURL holds the answer's route_service_url.
	KeyRouteServiceURL = "route_service_url"
	// KeyVolumeMounts holds the answer's volume_mounts, as the broker sent them (JSON,
	// mount_config included).
	KeyVolumeMounts = "volume_mounts"
)

// Answer is the part of a bind answer that belongs in the credentials Secret.
type Answer struct {
	Credentials     map[string]any
	SyslogDrainURL  string
	RouteServiceURL string
	VolumeMounts    []osb.VolumeMount
}

// Values returns what Encode is to be given for a: the credentials, plus the other fields
// under KeySyslogDrainURL, KeyRouteServiceURL and KeyVolumeMounts where they are set and
// the credentials do not have that key already (the broker's credentials win). Volume
// mounts are given as JSON values, so that Apply's JSONPath expressions see the spec's
// field names. Without other fields the credentials are returned as they are; otherwise a
// new map, a.Credentials is not modified.
func (a Answer) Values() map[string]any {
	extra := map[string]any{}
	if a.SyslogDrainURL != "" {
		extra[KeySyslogDrainURL] = a.SyslogDrainURL
	}
	if a.RouteServiceURL != "" {
		extra[KeyRouteServiceURL] = a.RouteServiceURL
	}
	if len(a.VolumeMounts) > 0 {
		var mounts []any
		// A []osb.VolumeMount always encodes, and decodes back into []any.
		if b, err := json.Marshal(a.VolumeMounts); err == nil && json.Unmarshal(b, &mounts) == nil {
			extra[KeyVolumeMounts] = mounts
		}
	}
	if len(extra) == 0 {
		return a.Credentials
	}
	out := maps.Clone(a.Credentials)
	if out == nil {
		out = make(map[string]any, len(extra))
	}
	for k, v := range extra {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}
