package jsonschema

import (
	"testing"

	"gotest.tools/v3/assert"
)

// TestValidateSupplied checks which properties of the root an object lacking them
// needs, at every nesting of the keywords that make them required, and that a
// validation that supplies nothing is the plain one.
func TestValidateSupplied(t *testing.T) {
	held := map[string]bool{"bar": true, "baz": true, "qux": true}
	supply := func(k string) bool { return held[k] }
	cases := []struct {
		name, schema, instance string
		supplied               []string
		problems               []string
	}{
		{"top-level required", `{"required":["foo","bar"]}`, `{"foo":1}`, []string{"bar"}, nil},
		{"allOf", `{"allOf":[{"required":["foo","bar"]}]}`, `{"foo":1}`, []string{"bar"}, nil},
		{"allOf nested in allOf", `{"allOf":[{"allOf":[{"required":["foo","bar"]}]}]}`, `{"foo":1}`, []string{"bar"}, nil},
		{"allOf through $ref", `{"$defs":{"pair":{"required":["foo","bar"]}},"allOf":[{"$ref":"#/$defs/pair"}]}`, `{"foo":1}`, []string{"bar"}, nil},
		{"a property nobody supplies stays missing", `{"allOf":[{"required":["foo","nope"]}]}`, `{"bar":1}`, nil,
			[]string{"missing properties 'foo', 'nope'"}},
		{"supplies what it can, names the rest", `{"allOf":[{"required":["bar","nope"]}]}`, `{}`, []string{"bar"},
			[]string{"missing property 'nope'"}},
		{"anyOf satisfied as it is takes nothing", `{"anyOf":[{"required":["foo"]},{"required":["foo","bar"]}]}`, `{"foo":1}`, nil, nil},
		{"anyOf takes the first alternative that can pass", `{"anyOf":[{"required":["foo","nope"]},{"required":["foo","bar"]},{"required":["foo","baz"]}]}`,
			`{"foo":1}`, []string{"bar"}, nil},
		{"anyOf nothing can satisfy", `{"anyOf":[{"required":["nope"]},{"required":["none"]}]}`, `{"foo":1}`, nil,
			[]string{"anyOf failed: the value matches none of the alternatives"}},
		{"anyOf inside allOf", `{"allOf":[{"anyOf":[{"required":["nope"]},{"allOf":[{"required":["foo","qux"]}]}]}]}`,
			`{"foo":1}`, []string{"qux"}, nil},
		{"oneOf satisfied as it is", `{"oneOf":[{"required":["foo"]},{"required":["bar"]}]}`, `{"foo":1}`, nil, nil},
		{"oneOf the only alternative supplies satisfy", `{"oneOf":[{"required":["foo","bar"]},{"required":["nope"]}]}`,
			`{"foo":1}`, []string{"bar"}, nil},
		{"oneOf two alternatives supplies satisfy: neither", `{"oneOf":[{"required":["foo","bar"]},{"required":["foo","baz"]}]}`,
			`{"foo":1}`, nil, []string{"oneOf failed: the value matches none of the alternatives"}},
		{"if then", `{` + d7 + `"if":{"required":["foo"]},"then":{"required":["bar"]}}`, `{"foo":1}`, []string{"bar"}, nil},
		{"if else", `{` + d7 + `"if":{"required":["foo"]},"else":{"required":["bar"]}}`, `{"x":1}`, []string{"bar"}, nil},
		{"if judges the object as it is", `{` + d7 + `"if":{"required":["bar"]},"then":{"required":["nope"]}}`, `{"foo":1}`, nil, nil},
		{"not judges the object as it is", `{"not":{"required":["bar"]}}`, `{"foo":1}`, nil, nil},
		{"dependentRequired", `{` + d20 + `"dependentRequired":{"foo":["bar"]}}`, `{"foo":1}`, []string{"bar"}, nil},
		{"dependencies in allOf", `{` + d7 + `"allOf":[{"dependencies":{"foo":["bar","baz"]}}]}`, `{"foo":1}`, []string{"bar", "baz"}, nil},
		{"dependentSchemas", `{` + d20 + `"dependentSchemas":{"foo":{"allOf":[{"required":["bar"]}]}}}`, `{"foo":1}`, []string{"bar"}, nil},
		{"only the root is supplied", `{"properties":{"db":{"allOf":[{"required":["foo","bar"]}]}}}`, `{"db":{"foo":1}}`, nil,
			[]string{"/db: missing property 'bar'"}},
		{"present properties need nothing", `{"allOf":[{"required":["foo","bar"]}]}`, `{"foo":1,"bar":2}`, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			assert.NilError(t, err)
			v, err := decode([]byte(tc.instance))
			assert.NilError(t, err)
			supplied, problems, err := s.ValidateSupplied(v, supply)
			assert.NilError(t, err)
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			assert.DeepEqual(t, supplied, tc.supplied)
			assert.DeepEqual(t, got, tc.problems)
		})
	}
}

// TestValidateSupplied_NothingSuppliedIsPlainValidation checks that without a supply
// the problems are those of ValidateValue, with the missing properties named.
func TestValidateSupplied_NothingSuppliedIsPlainValidation(t *testing.T) {
	s, err := Compile([]byte(`{"allOf":[{"required":["foo","bar"]}],"anyOf":[{"required":["baz"]}]}`))
	assert.NilError(t, err)
	v, err := decode([]byte(`{"foo":1}`))
	assert.NilError(t, err)
	supplied, problems, err := s.ValidateSupplied(v, nil)
	assert.NilError(t, err)
	plain, err := s.ValidateValue(v)
	assert.NilError(t, err)
	assert.Assert(t, supplied == nil)
	assert.DeepEqual(t, problems, plain)
	assert.DeepEqual(t, problems[0].Missing, []string{"bar"})
	assert.Assert(t, problems[1].Missing == nil, "an anyOf that fails names no property")
}
