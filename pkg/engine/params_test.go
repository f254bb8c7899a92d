package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

const schema = `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object",
"properties":{"storage_gb":{"type":"integer","maximum":10},"ha":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}},"ratio":{"type":"number"}},
"required":["storage_gb"]}`

func TestParseParamFlags_TypesValuesBySchemaAndRepeatsBecomeArrays(t *testing.T) {
	got, err := ParseParamFlags([]string{"storage_gb=5", "ha=true", "tags=a", "tags=b", "ratio=0.5", "name=x=y", "many=1", "many=2"}, json.RawMessage(schema))
	assert.NilError(t, err)
	b, _ := json.Marshal(got)
	assert.Equal(t, string(b), `{"ha":true,"many":["1","2"],"name":"x=y","ratio":0.5,"storage_gb":5,"tags":["a","b"]}`)
}

func TestParseParamFlags_BadInputNamesTheParameter(t *testing.T) {
	_, err := ParseParamFlags([]string{"storage_gb=lots"}, json.RawMessage(schema))
	assert.ErrorContains(t, err, "parameter storage_gb")
	_, err = ParseParamFlags([]string{"novalue"}, nil)
	assert.ErrorContains(t, err, "key=value")
}

func TestValidateParameters_PointsAtTheParameter(t *testing.T) {
	err := ValidateParameters(json.RawMessage(schema), json.RawMessage(`{"storage_gb": 11}`))
	assert.ErrorContains(t, err, "parameter storage_gb: maximum")
	err = ValidateParameters(json.RawMessage(schema), json.RawMessage(`{}`))
	assert.ErrorContains(t, err, "storage_gb")
	assert.NilError(t, ValidateParameters(json.RawMessage(schema), json.RawMessage(`{"storage_gb": 3}`)))
	assert.NilError(t, ValidateParameters(nil, json.RawMessage(`{"anything": 1}`)))
}

func TestResolveParameters_DuplicateKeysAreAnError(t *testing.T) {
	read := func(context.Context, string, string) (map[string][]byte, error) {
		return map[string][]byte{"k": []byte(`{"a":2}`)}, nil
	}
	_, err := ResolveParameters(context.Background(), "dev", &runtime.RawExtension{Raw: []byte(`{"a":1}`)},
		[]v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "s", Key: "k"}}}, read)
	assert.ErrorContains(t, err, `parameter "a" is given more than once`)
}

func TestResolveParameters_ManySecretsCannotMakeTheParametersUnbounded(t *testing.T) {
	reads := 0
	read := func(_ context.Context, _, name string) (map[string][]byte, error) {
		reads++
		return map[string][]byte{name: []byte(strings.Repeat("v", 200<<10))}, nil
	}
	var from []v1alpha1.ParametersFromSource
	for i := range 50 {
		from = append(from, v1alpha1.ParametersFromSource{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: fmt.Sprintf("s%d", i)}})
	}
	_, err := ResolveParameters(context.Background(), "dev", nil, from, read)
	assert.ErrorContains(t, err, "more than 524288 bytes")
	assert.Equal(t, reads, 3, "reading stops at the limit")

	_, err = ResolveParameters(context.Background(), "dev", &runtime.RawExtension{Raw: []byte(`{"a":"` + strings.Repeat("v", MaxParametersBytes) + `"}`)}, nil, read)
	assert.ErrorContains(t, err, "more than 524288 bytes")
	_, err = ResolveParameters(context.Background(), "dev", nil, from[:2], read)
	assert.NilError(t, err)
}

func TestParameters_ChangedSendsNewInlineKeysAndAllSecretKeys(t *testing.T) {
	p := Parameters{All: map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`2`), "s": json.RawMessage(`"x"`)}, FromSecret: map[string]bool{"s": true}}
	held := p.InlineHashes()
	assert.Assert(t, is.Len(held, 2))
	p.All["b"] = json.RawMessage(`3`)
	assert.Equal(t, string(p.Changed(held)), `{"b":3,"s":"x"}`)
}

// unkeyedChecksum is the checksum earlier releases stored: a plain SHA-256.
func unkeyedChecksum(p Parameters) string {
	sum := sha256.Sum256(p.JSON())
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestParameters_Checksum_IsKeyedWithTheRecordsSalt(t *testing.T) {
	p := Parameters{All: map[string]json.RawMessage{"password": json.RawMessage(`"hunter2"`)}, FromSecret: map[string]bool{"password": true}}
	a, b := p, p
	a.Salt, b.Salt = "salt-a", "salt-b"

	assert.Assert(t, strings.HasPrefix(a.Checksum(), "hmac-sha256:"), a.Checksum())
	assert.Assert(t, a.Checksum() != b.Checksum(), "records with the same values have different checksums")
	assert.Assert(t, a.Checksum() != "hmac-sha256:"+strings.TrimPrefix(unkeyedChecksum(p), "sha256:"))
	assert.Equal(t, a.Checksum(), a.Checksum())
	assert.Equal(t, Parameters{Salt: "salt-a"}.Checksum(), "")
}

func TestParameters_SameChecksum_ComparesEarlierUnkeyedChecksumsTheOldWay(t *testing.T) {
	p := Parameters{All: map[string]json.RawMessage{"a": json.RawMessage(`1`)}, Salt: "salt"}
	other := Parameters{All: map[string]json.RawMessage{"a": json.RawMessage(`2`)}, Salt: "salt"}
	tests := []struct {
		name   string
		p      Parameters
		stored string
		same   bool
	}{
		{name: "keyed checksum of the same values", p: p, stored: p.Checksum(), same: true},
		{name: "keyed checksum of other values", p: p, stored: other.Checksum()},
		{name: "keyed checksum under another salt", p: p, stored: Parameters{All: p.All, Salt: "other"}.Checksum()},
		{name: "unkeyed checksum of the same values", p: p, stored: unkeyedChecksum(p), same: true},
		{name: "unkeyed checksum of other values", p: p, stored: unkeyedChecksum(other)},
		{name: "no parameters, no checksum", p: Parameters{Salt: "salt"}, stored: "", same: true},
		{name: "parameters removed", p: Parameters{Salt: "salt"}, stored: unkeyedChecksum(p)},
		{name: "parameters added", p: p, stored: ""},
		{name: "touched (every parameter to be sent again)", p: p, stored: "touched"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.p.SameChecksum(tc.stored), tc.same)
		})
	}
}
