package osb

import (
	"encoding/json"
	"fmt"
)

// The limits of what a platform stores from a broker's answer. The OSB specification
// sets none; a record (a ConfigMap) and a binding's Secret hold at most 1 MiB each, so an
// answer with a field over its limit is refused as a malformed answer (see
// OversizedAnswer) rather than making an outcome that cannot be stored.
const (
	// MaxAnswerURL is the longest dashboard_url, syslog_drain_url or route_service_url,
	// in bytes.
	MaxAnswerURL = 4096
	// MaxOperationKey is the longest operation key, in bytes.
	MaxOperationKey = 4096
	// MaxAnswerMounts is the largest endpoints and volume_mounts of a binding together,
	// in bytes of JSON.
	MaxAnswerMounts = 64 << 10
	// MaxAnswerCredentials is the largest credentials of a binding, in bytes of JSON.
	MaxAnswerCredentials = 512 << 10
)

// OversizedAnswer says which field of answer (a *ProvisionResponse, *UpdateResponse,
// *DeprovisionResponse, *BindResponse, *GetBindingResponse or *UnbindResponse) is over
// its limit; nil when none is, or for any other value.
func OversizedAnswer(answer any) error {
	var urls map[string]string
	var op string
	var mounts, creds any
	switch a := answer.(type) {
	case *ProvisionResponse:
		if a == nil {
			return nil
		}
		urls, op = map[string]string{"dashboard_url": a.DashboardURL}, a.Operation
	case *UpdateResponse:
		if a == nil {
			return nil
		}
		urls, op = map[string]string{"dashboard_url": a.DashboardURL}, a.Operation
	case *DeprovisionResponse:
		if a == nil {
			return nil
		}
		op = a.Operation
	case *UnbindResponse:
		if a == nil {
			return nil
		}
		op = a.Operation
	case *BindResponse:
		if a == nil {
			return nil
		}
		urls = map[string]string{"syslog_drain_url": a.SyslogDrainURL, "route_service_url": a.RouteServiceURL}
		op, mounts, creds = a.Operation, []any{a.Endpoints, a.VolumeMounts}, a.Credentials
	case *GetBindingResponse:
		if a == nil {
			return nil
		}
		urls = map[string]string{"syslog_drain_url": a.SyslogDrainURL, "route_service_url": a.RouteServiceURL}
		mounts, creds = []any{a.Endpoints, a.VolumeMounts}, a.Credentials
	default:
		return nil
	}
	for _, field := range []string{"dashboard_url", "syslog_drain_url", "route_service_url"} {
		if n := len(urls[field]); n > MaxAnswerURL {
			return fmt.Errorf("%s is %d bytes, over the limit of %d", field, n, MaxAnswerURL)
		}
	}
	if len(op) > MaxOperationKey {
		return fmt.Errorf("the operation key is %d bytes, over the limit of %d", len(op), MaxOperationKey)
	}
	if err := maxJSON("endpoints and volume_mounts", mounts, MaxAnswerMounts); err != nil {
		return err
	}
	return maxJSON("credentials", creds, MaxAnswerCredentials)
}

// maxJSON says when v, encoded as JSON, is longer than limit bytes.
func maxJSON(what string, v any, limit int) error {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s cannot be encoded: %w", what, err)
	}
	if len(raw) > limit {
		return fmt.Errorf("%s are %d bytes of JSON, over the limit of %d", what, len(raw), limit)
	}
	return nil
}
