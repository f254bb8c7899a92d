package osb

import (
	"encoding/json"
	"testing"
)

// The fuzz targets check that no broker answer can panic the decoders and
// that a successful decode yields something the rest of the client can use.

func FuzzDecodeCatalog(f *testing.F) {
	f.Add([]byte(fullCatalog))
	f.Add([]byte(`{"services":[]}`))
	f.Add([]byte(`{"services":null}`))
	f.Add([]byte(`{"services":[{"id":"s","plans":[{"id":"p","schemas":{"service_instance":{"create":{"parameters":1}}}}]}]}`))
	f.Add([]byte(`{"services":[{"plans":[{"free":"yes"}]}]}`))
	f.Add([]byte(``))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCatalog(data)
		if err != nil {
			return
		}
		if c.Services == nil {
			t.Fatal("decoded catalog has a nil service list")
		}
		_ = c.Validate()
		for i := range c.Services {
			s := &c.Services[i]
			_ = s.ProfileMetadata()
			for j := range s.Plans {
				p := &s.Plans[j]
				_, _, _ = p.EffectiveBindable(s), p.EffectivePlanUpdateable(s), p.IsFree()
				_ = p.MaxPollingDuration()
				_ = p.ProfileMetadata()
				for _, schema := range []json.RawMessage{p.InstanceCreateSchema(), p.InstanceUpdateSchema(), p.BindingCreateSchema(s)} {
					if schema != nil && !json.Valid(schema) {
						t.Fatalf("schema is not valid JSON: %q", schema)
					}
				}
			}
		}
	})
}

func FuzzDecodeLastOperation(f *testing.F) {
	f.Add([]byte(`{"state":"in progress","description":"50%"}`))
	f.Add([]byte(`{"state":"succeeded"}`))
	f.Add([]byte(`{"state":"failed","instance_usable":false,"update_repeatable":true}`))
	f.Add([]byte(`{"state":"unknown"}`))
	f.Add([]byte(`{"state":null,"instance_usable":"x"}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		lo, err := DecodeLastOperation(data)
		if err != nil {
			return
		}
		switch lo.State {
		case StateInProgress, StateSucceeded, StateFailed:
		default:
			t.Fatalf("accepted unknown state %q", lo.State)
		}
		_ = Decide(OpPollUpdate, PollOutcomeOf(lo, nil))
	})
}

func FuzzDecodeBindResponse(f *testing.F) {
	f.Add([]byte(`{"credentials":{"a":"b"},"endpoints":[{"host":"h","ports":["1","2-3"],"protocol":"udp"}]}`))
	f.Add([]byte(`{"volume_mounts":[{"driver":"d","container_dir":"/c","mode":"r","device_type":"shared","device":{"volume_id":"v","mount_config":{}}}]}`))
	f.Add([]byte(`{"metadata":{"expires_at":"2026-01-01T00:00:00.0Z","renew_before":"x"}}`))
	f.Add([]byte(`{"operation":"op"}`))
	f.Add([]byte(`{"endpoints":[{"ports":[1]}]}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		br, err := DecodeBindResponse(data)
		if err != nil {
			return
		}
		_, _ = br.Metadata.ExpiresAtTime()
		_, _ = br.Metadata.RenewBeforeTime()
		if _, err := json.Marshal(br); err != nil {
			t.Fatalf("a decoded response must re-encode: %v", err)
		}
	})
}

func FuzzDecodeErrorBody(f *testing.F) {
	f.Add([]byte(`{"error":"AsyncRequired","description":"d"}`))
	f.Add([]byte(`{"error":"ConcurrencyError","instance_usable":false,"update_repeatable":false}`))
	f.Add([]byte(`{"error":1,"instance_usable":"no"}`))
	f.Add([]byte(`<html>`))
	f.Add([]byte("\xff\xfe"))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		er := DecodeErrorBody(data)
		he := &HTTPStatusError{Method: "GET", Path: "/v2/catalog", StatusCode: 500, ErrorCode: er.Error,
			Description: er.Description, InstanceUsable: er.InstanceUsable, UpdateRepeatable: er.UpdateRepeatable,
			BodyExcerpt: excerpt(data), Message: errorMessage(data)}
		_ = he.Error()
		if len(he.BodyExcerpt) > excerptLimit {
			t.Fatalf("excerpt of %d bytes exceeds the limit", len(he.BodyExcerpt))
		}
		if len(he.Message) > excerptLimit+len("…") {
			t.Fatalf("message of %d bytes exceeds the limit", len(he.Message))
		}
		_ = Decide(OpUpdate, OutcomeOf(0, he))
	})
}
