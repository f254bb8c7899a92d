package credentials_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
)

// secretValue is a credential value that no error message may contain.
const secretValue = "s3cr3t-Vx9q-7fK2"

// assertNoSecret fails when err's message contains secretValue.
func assertNoSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		assert.Check(t, !strings.Contains(err.Error(), secretValue), "the error leaks a credential: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestEncode(t *testing.T) {
	tests := []struct {
		name    string
		creds   map[string]any
		want    map[string][]byte
		wantErr string
	}{
		{name: "strings are written as they are",
			creds: map[string]any{"uri": "postgres://u:p@db:5432/x?a=<b>", "empty": ""},
			want:  map[string][]byte{"uri": []byte("postgres://u:p@db:5432/x?a=<b>"), "empty": {}}},
		{name: "other values are JSON",
			creds: map[string]any{
				"port":   float64(5432),
				"ratio":  0.5,
				"number": json.Number("12345678901234567890"),
				"tls":    true,
				"none":   nil,
				"hosts":  []any{"a", "b"},
				"object": map[string]any{"b": 1, "a": "<&>"},
			},
			want: map[string][]byte{
				"port":   []byte("5432"),
				"ratio":  []byte("0.5"),
				"number": []byte("12345678901234567890"),
				"tls":    []byte("true"),
				"none":   []byte("null"),
				"hosts":  []byte(`["a","b"]`),
				"object": []byte(`{"a":"<&>","b":1}`),
			}},
		{name: "no credentials, no data", creds: nil, want: map[string][]byte{}},
		{name: "a key with a space is refused, naming it",
			creds:   map[string]any{"user name": secretValue, "ok": "x"},
			wantErr: `the broker's credentials have an invalid key "user name", which cannot be a Secret key: a valid config key must consist of alphanumeric characters`},
		{name: "a key with a slash is refused",
			creds:   map[string]any{"a/b": map[string]any{"x": secretValue}},
			wantErr: `invalid key "a/b", which cannot be a Secret key: a valid config key`},
		{name: "a value that is not JSON is refused by its type",
			creds:   map[string]any{"fn": func() {}},
			wantErr: `the broker returned the credential "fn" as a func(), which cannot be encoded as JSON`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := credentials.Encode(tc.creds)
			if tc.wantErr != "" {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				assertNoSecret(t, err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, tc.want)
		})
	}
}

func TestApply(t *testing.T) {
	creds := map[string]any{
		"host":     "db.example.com",
		"port":     float64(5432),
		"username": "app",
		"password": secretValue,
		"tls":      map[string]any{"ca": "CA", "verify": true},
		"hosts":    []any{"a", "b"},
	}
	extra := map[string][]byte{"sslmode": []byte("require"), "password": []byte(secretValue + "-extra")}
	readSecret := func(_ context.Context, name string) (map[string][]byte, error) {
		switch name {
		case "extra":
			return maps.Clone(extra), nil
		case "forbidden":
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, name, errors.New("no"))
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	rename := func(from, to string) v1alpha1.SecretTransform {
		return v1alpha1.SecretTransform{RenameKey: &v1alpha1.RenameKeyTransform{From: from, To: to}}
	}
	remove := func(key string) v1alpha1.SecretTransform {
		return v1alpha1.SecretTransform{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: key}}
	}
	addString := func(key, value string) v1alpha1.SecretTransform {
		return v1alpha1.SecretTransform{AddKey: &v1alpha1.AddKeyTransform{Key: key, StringValue: &value}}
	}
	addJSONPath := func(key, expr string) v1alpha1.SecretTransform {
		return v1alpha1.SecretTransform{AddKey: &v1alpha1.AddKeyTransform{Key: key, JSONPathExpression: &expr}}
	}
	addFrom := func(name string) v1alpha1.SecretTransform {
		return v1alpha1.SecretTransform{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: name}}}
	}

	tests := []struct {
		name       string
		transforms []v1alpha1.SecretTransform
		want       map[string]string // changes from the encoded credentials; "" removes
		wantErr    string
	}{
		{name: "no transforms, no change"},
		{name: "rename a key", transforms: []v1alpha1.SecretTransform{rename("username", "user")},
			want: map[string]string{"username": "", "user": "app"}},
		{name: "rename onto an existing key replaces it", transforms: []v1alpha1.SecretTransform{rename("password", "username")},
			want: map[string]string{"password": "", "username": secretValue}},
		{name: "rename a key onto itself", transforms: []v1alpha1.SecretTransform{rename("host", "host")}},
		{name: "rename a missing key lists the keys present",
			transforms: []v1alpha1.SecretTransform{rename("user", "login")},
			wantErr:    `secret transform 1 (renameKey "user" to "login"): the credentials have no key "user"; the keys are: host, hosts, password, port, tls, username`},
		{name: "rename to an invalid key",
			transforms: []v1alpha1.SecretTransform{rename("password", "pass word")},
			wantErr:    `secret transform 1 (renameKey "password" to "pass word"): key "pass word" is not a valid Secret key`},
		{name: "add a string value", transforms: []v1alpha1.SecretTransform{addString("type", "postgresql")},
			want: map[string]string{"type": "postgresql"}},
		{name: "add a byte value replacing a key",
			transforms: []v1alpha1.SecretTransform{{AddKey: &v1alpha1.AddKeyTransform{Key: "host", Value: []byte("other")}}},
			want:       map[string]string{"host": "other"}},
		{name: "add a JSONPath value", transforms: []v1alpha1.SecretTransform{addJSONPath("address", "{.host}:{.port}")},
			want: map[string]string{"address": "db.example.com:5432"}},
		{name: "add a nested JSONPath value", transforms: []v1alpha1.SecretTransform{addJSONPath("ca.crt", "{.tls.ca}")},
			want: map[string]string{"ca.crt": "CA"}},
		{name: "a JSONPath object is JSON", transforms: []v1alpha1.SecretTransform{addJSONPath("tls.json", "{.tls}")},
			want: map[string]string{"tls.json": `{"ca":"CA","verify":true}`}},
		{name: "a JSONPath list is space-separated", transforms: []v1alpha1.SecretTransform{addJSONPath("h", "{.hosts[*]}")},
			want: map[string]string{"h": "a b"}},
		{name: "a JSONPath sees the credentials, not the renamed keys",
			transforms: []v1alpha1.SecretTransform{rename("host", "hostname"), addJSONPath("address", "{.host}")},
			want:       map[string]string{"host": "", "hostname": "db.example.com", "address": "db.example.com"}},
		{name: "a JSONPath to a missing field names the expression",
			transforms: []v1alpha1.SecretTransform{addJSONPath("address", "{.hostname}:{.port}")},
			wantErr: `secret transform 1 (addKey "address"): jsonPathExpression "{.hostname}:{.port}" cannot be evaluated against the credentials ` +
				`(keys: host, hosts, password, port, tls, username): hostname is not found`},
		{name: "a JSONPath failure quoting a credential does not repeat it",
			transforms: []v1alpha1.SecretTransform{addJSONPath("x", `{.password[?(@.a=="b")]}`)},
			wantErr:    `jsonPathExpression "{.password[?(@.a==\"b\")]}" cannot be evaluated against the credentials (keys: host, hosts, password, port, tls, username): it does not match the credentials' structure`},
		{name: "an invalid JSONPath names the expression",
			transforms: []v1alpha1.SecretTransform{addJSONPath("address", "{.host")},
			wantErr:    `secret transform 1 (addKey "address"): jsonPathExpression "{.host" is not a valid JSONPath template (write e.g. {.host}:{.port}): `},
		{name: "an empty JSONPath", transforms: []v1alpha1.SecretTransform{addJSONPath("address", " ")},
			wantErr: `jsonPathExpression is empty`},
		{name: "add with no value", transforms: []v1alpha1.SecretTransform{{AddKey: &v1alpha1.AddKeyTransform{Key: "k"}}},
			wantErr: `secret transform 1 (addKey "k"): exactly one of value, stringValue and jsonPathExpression must be set, found 0`},
		{name: "add with two values",
			transforms: []v1alpha1.SecretTransform{{AddKey: &v1alpha1.AddKeyTransform{Key: "k", Value: []byte(secretValue), StringValue: ptr(secretValue)}}},
			wantErr:    `exactly one of value, stringValue and jsonPathExpression must be set, found 2`},
		{name: "add an invalid key", transforms: []v1alpha1.SecretTransform{addString("$k", secretValue)},
			wantErr: `secret transform 1 (addKey "$k"): key "$k" is not a valid Secret key`},
		{name: "add the keys of a Secret", transforms: []v1alpha1.SecretTransform{addFrom("extra")},
			want: map[string]string{"sslmode": "require", "password": secretValue + "-extra"}},
		{name: "a missing Secret says to create it", transforms: []v1alpha1.SecretTransform{remove("tls"), addFrom("nope")},
			wantErr: `secret transform 2 (addKeysFrom secret "nope"): secret "nope" not found in the binding's namespace: create it, or remove the transform`},
		{name: "an unreadable Secret", transforms: []v1alpha1.SecretTransform{addFrom("forbidden")},
			wantErr: `secret transform 1 (addKeysFrom secret "forbidden"): read secret "forbidden": secrets "forbidden" is forbidden: no`},
		{name: "a Secret in another namespace",
			transforms: []v1alpha1.SecretTransform{{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: "extra", Namespace: "other"}}}},
			wantErr:    `secretRef.namespace "other" is not supported; the Secret must be in the binding's namespace`},
		{name: "remove a key", transforms: []v1alpha1.SecretTransform{remove("hosts")},
			want: map[string]string{"hosts": ""}},
		{name: "remove a missing key", transforms: []v1alpha1.SecretTransform{remove("nothing")}},
		{name: "an empty transform", transforms: []v1alpha1.SecretTransform{{}},
			wantErr: `secret transform 1 (empty): exactly one of renameKey, addKey, addKeysFrom and removeKey must be set, found 0`},
		{name: "a transform with two changes",
			transforms: []v1alpha1.SecretTransform{{RenameKey: &v1alpha1.RenameKeyTransform{From: "a", To: "b"}, RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "c"}}},
			wantErr:    `secret transform 1 (renameKey "a" to "b", removeKey "c"): exactly one of renameKey, addKey, addKeysFrom and removeKey must be set, found 2`},
		{name: "transforms apply in order",
			transforms: []v1alpha1.SecretTransform{
				addFrom("extra"), rename("password", "pw"), remove("sslmode"), addString("password", "x"), rename("pw", "password"),
			},
			want: map[string]string{"password": secretValue + "-extra"}},
		{name: "a later transform sees what an earlier one removed",
			transforms: []v1alpha1.SecretTransform{remove("host"), rename("host", "h")},
			wantErr:    `secret transform 2 (renameKey "host" to "h"): the credentials have no key "host"; the keys are: hosts, password, port, tls, username`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := credentials.Encode(creds)
			assert.NilError(t, err)
			before, err := credentials.Encode(creds)
			assert.NilError(t, err)

			got, err := credentials.Apply(context.Background(), data, creds, tc.transforms, readSecret)
			assert.DeepEqual(t, data, before) // the input is left alone
			if tc.wantErr != "" {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				assertNoSecret(t, err)
				return
			}
			assert.NilError(t, err)
			want := maps.Clone(before)
			for k, v := range tc.want {
				if v == "" {
					delete(want, k)
				} else {
					want[k] = []byte(v)
				}
			}
			assert.DeepEqual(t, got, want)
		})
	}
}

func TestApply_ResultSharesNoBytesWithTheInput(t *testing.T) {
	data := map[string][]byte{"a": []byte("one")}
	value := []byte("two")
	got, err := credentials.Apply(context.Background(), data, nil, []v1alpha1.SecretTransform{
		{AddKey: &v1alpha1.AddKeyTransform{Key: "b", Value: value}},
	}, nil)
	assert.NilError(t, err)
	got["a"][0] = 'X'
	got["b"][0] = 'X'
	assert.Equal(t, string(data["a"]), "one")
	assert.Equal(t, string(value), "two")
}

func TestWithServiceBindingKeys(t *testing.T) {
	tests := []struct {
		name          string
		data          map[string]string
		typ, provider string
		want          map[string]string
	}{
		{name: "both are added", data: map[string]string{"host": "h"}, typ: "postgresql", provider: "acme",
			want: map[string]string{"host": "h", "type": "postgresql", "provider": "acme"}},
		{name: "the broker's keys win", data: map[string]string{"type": "mysql", "provider": "bitnami"}, typ: "postgresql", provider: "acme",
			want: map[string]string{"type": "mysql", "provider": "bitnami"}},
		{name: "one of them is there", data: map[string]string{"type": "mysql"}, typ: "postgresql", provider: "acme",
			want: map[string]string{"type": "mysql", "provider": "acme"}},
		{name: "empty values add nothing", data: map[string]string{"host": "h"},
			want: map[string]string{"host": "h"}},
		{name: "no data", typ: "redis", want: map[string]string{"type": "redis"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := bytesMap(tc.data)
			before := bytesMap(tc.data)
			got := credentials.WithServiceBindingKeys(data, tc.typ, tc.provider)
			assert.DeepEqual(t, got, bytesMap(tc.want))
			assert.DeepEqual(t, data, before)
		})
	}
}

func TestKeys(t *testing.T) {
	assert.DeepEqual(t, credentials.Keys(map[string][]byte{"b": nil, "a": nil, "C": nil, "a.b": nil}), []string{"C", "a", "a.b", "b"})
	assert.Check(t, is.Len(credentials.Keys(nil), 0))
}

func bytesMap(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}
