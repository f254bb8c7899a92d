// Package credentials turns the credentials of a broker's bind answer into the data of
// the binding's credentials Secret.
//
// The steps, in the order a caller takes them:
//
//  0. Answer.Values adds the fields of the answer other than its credentials that may
//     hold secrets (syslog_drain_url, route_service_url, volume_mounts) to the
//     credentials: they belong in the Secret, never in the binding record.
//  1. Encode turns the credentials object into Secret data: strings as they are, every
//     other value as JSON.
//  2. Apply runs the binding's SecretTransforms (spec.secretTransforms) over that data, in
//     order. TransformFlags builds those transforms from the command line.
//  3. WithServiceBindingKeys adds the "type" and "provider" keys of the servicebinding.io
//     convention where the broker and the transforms left them out.
//
// Credential values are secrets: no error of this package contains one. Errors name keys,
// transforms and Secrets, never values.
package credentials

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Encode returns the Secret data for the credentials creds of a bind answer. A string
// value becomes its bytes as they are; every other value (number, boolean, object, array,
// null) becomes its JSON encoding, without HTML escaping, so that a port 5432 is "5432" and
// an object can be read back with a JSON parser.
//
// Every key must be a valid Secret key (alphanumerics, '-', '_' and '.'); Encode fails on
// the first invalid key, in sorted order, naming the key but not its value.
func Encode(creds map[string]any) (map[string][]byte, error) {
	data := make(map[string][]byte, len(creds))
	for _, k := range slices.Sorted(maps.Keys(creds)) {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return nil, fmt.Errorf("the broker's credentials have an invalid key %q, which cannot be a Secret key: %s", k, strings.Join(errs, "; "))
		}
		b, err := encodeValue(creds[k])
		if err != nil {
			return nil, fmt.Errorf("the broker returned the credential %q as a %T, which cannot be encoded as JSON", k, creds[k])
		}
		data[k] = b
	}
	return data, nil
}

// encodeValue is a string's bytes, or the JSON encoding of any other value.
func encodeValue(v any) ([]byte, error) {
	if s, ok := v.(string); ok {
		return []byte(s), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// validateKey reports whether k is a valid Secret key, as `key "k" is not a valid Secret
// key: reasons`. The reasons come from the API's own validation and never quote k's value.
func validateKey(k string) error {
	if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
		return fmt.Errorf("key %q is not a valid Secret key: %s", k, strings.Join(errs, "; "))
	}
	return nil
}

// WithServiceBindingKeys returns a copy of data with the keys "type" and "provider" of the
// servicebinding.io convention set to typ and provider, where data does not have them
// already: a value from the broker or from a transform wins. An empty typ or provider adds
// nothing. data is not modified.
func WithServiceBindingKeys(data map[string][]byte, typ, provider string) map[string][]byte {
	out := cloneData(data)
	if _, ok := out["type"]; !ok && typ != "" {
		out["type"] = []byte(typ)
	}
	if _, ok := out["provider"]; !ok && provider != "" {
		out["provider"] = []byte(provider)
	}
	return out
}

// Keys returns the keys of data, sorted: what a binding's status records of its Secret.
func Keys(data map[string][]byte) []string {
	return slices.Sorted(maps.Keys(data))
}

// cloneData is a deep copy of data, never nil.
func cloneData(data map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(data))
	for k, v := range data {
		out[k] = slices.Clone(v)
	}
	return out
}
