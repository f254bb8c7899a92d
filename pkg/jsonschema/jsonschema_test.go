package jsonschema

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const (
	d4   = `"$schema":"http://json-schema.org/draft-04/schema#",`
	d6   = `"$schema":"http://json-schema.org/draft-06/schema#",`
	d7   = `"$schema":"http://json-schema.org/draft-07/schema#",`
	d19  = `"$schema":"https://json-schema.org/draft/2019-09/schema",`
	d20  = `"$schema":"https://json-schema.org/draft/2020-12/schema",`
	none = ""
)

type validateCase struct {
	name     string
	schema   string // an object's members without braces, or a whole schema in braces
	instance string
	want     []string // Problem.String() of each problem, in order; nil when valid
}

func run(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			schema := tc.schema
			if !strings.HasPrefix(schema, "{") && schema != "true" && schema != "false" {
				schema = "{" + strings.TrimSuffix(schema, ",") + "}"
			}
			s, err := Compile([]byte(schema))
			assert.NilError(t, err)
			problems, err := s.Validate([]byte(tc.instance))
			assert.NilError(t, err)
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			assert.DeepEqual(t, got, tc.want)
		})
	}
}

func TestType(t *testing.T) {
	run(t, []validateCase{
		{"object ok", `"type":"object"`, `{}`, nil},
		{"object bad", `"type":"object"`, `[]`, []string{"got array, want object"}},
		{"array", `"type":"array"`, `{}`, []string{"got object, want array"}},
		{"string", `"type":"string"`, `5`, []string{"got number, want string"}},
		{"number accepts integer", `"type":"number"`, `5`, nil},
		{"number rejects string", `"type":"number"`, `"5"`, []string{"got string, want number"}},
		{"integer", `"type":"integer"`, `5`, nil},
		{"integer 1.0", `"type":"integer"`, `1.0`, nil},
		{"integer 1e3", `"type":"integer"`, `1e3`, nil},
		{"integer big", `"type":"integer"`, `123456789012345678901234567890`, nil},
		{"integer rejects 1.5", `"type":"integer"`, `1.5`, []string{"got number, want integer"}},
		{"boolean", `"type":"boolean"`, `false`, nil},
		{"boolean rejects 0", `"type":"boolean"`, `0`, []string{"got number, want boolean"}},
		{"null", `"type":"null"`, `null`, nil},
		{"null rejects empty string", `"type":"null"`, `""`, []string{"got string, want null"}},
		{"array of types", `"type":["string","null"]`, `null`, nil},
		{"array of types in canonical order", `"type":["string","integer","null"]`, `true`,
			[]string{"got boolean, want null or integer or string"}},
		{"type stops other keywords", `"type":"string","enum":["a"]`, `1`, []string{"got number, want string"}},
		{"nested path", `"properties":{"a":{"properties":{"b":{"type":"string"}}}}`, `{"a":{"b":1}}`,
			[]string{"/a/b: got number, want string"}},
	})
}

func TestEnumConst(t *testing.T) {
	run(t, []validateCase{
		{"enum ok", `"enum":["14","15"]`, `"15"`, nil},
		{"enum bad", `"enum":["14","15","16"]`, `"13"`, []string{"value must be one of '14', '15', '16'"}},
		{"enum one", `"enum":["only"]`, `"x"`, []string{"value must be 'only'"}},
		{"enum numbers compare by value", `"enum":[3,5]`, `5.0`, nil},
		{"enum mixed", `"enum":[3,"a",null,true]`, `4`, []string{"value must be one of 3, 'a', null, true"}},
		{"enum object", `"enum":[{"a":[1,2]}]`, `{"a":[1,2.0]}`, nil},
		{"enum object bad", `"enum":[{"a":1}]`, `{"a":2}`, []string{"value must be one of the values the schema lists"}},
		{"enum type strict", `"enum":[1]`, `"1"`, []string{"value must be 1"}},
		{"const draft6", d6 + `"const":"x"`, `"y"`, []string{"value must be 'x'"}},
		{"const ok", d7 + `"const":{"a":1}`, `{"a":1.0}`, nil},
		{"const object", d7 + `"const":{"a":1}`, `{"a":2}`, []string{"value must be the constant the schema gives"}},
		{"const ignored in draft-04", d4 + `"const":"x"`, `"y"`, nil},
		{"false is not 0", d7 + `"const":false`, `0`, []string{"value must be false"}},
		{"quotes are escaped", `"enum":["it's"]`, `"x"`, []string{`value must be 'it\'s'`}},
	})
}

func TestNumbers(t *testing.T) {
	run(t, []validateCase{
		{"maximum", `"maximum":10`, `11`, []string{"maximum: got 11, want 10"}},
		{"maximum equal", `"maximum":10`, `10`, nil},
		{"minimum", `"minimum":1`, `0`, []string{"minimum: got 0, want 1"}},
		{"minimum decimal", `"minimum":0.1`, `0.09999999999999999999`, []string{"minimum: got 0.09999999999999999999, want 0.1"}},
		{"draft-04 exclusiveMaximum true", d4 + `"maximum":10,"exclusiveMaximum":true`, `10`,
			[]string{"exclusiveMaximum: got 10, want 10"}},
		{"draft-04 exclusiveMaximum false", d4 + `"maximum":10,"exclusiveMaximum":false`, `10`, nil},
		{"draft-04 exclusiveMinimum true", d4 + `"minimum":1,"exclusiveMinimum":true`, `1`,
			[]string{"exclusiveMinimum: got 1, want 1"}},
		{"draft-04 exclusiveMinimum true passes above", d4 + `"minimum":1,"exclusiveMinimum":true`, `1.5`, nil},
		{"draft-06 exclusiveMaximum number", d6 + `"exclusiveMaximum":10`, `10`, []string{"exclusiveMaximum: got 10, want 10"}},
		{"draft-06 exclusiveMaximum below", d6 + `"exclusiveMaximum":10`, `9.999`, nil},
		{"2020 exclusiveMinimum number", d20 + `"exclusiveMinimum":0`, `0`, []string{"exclusiveMinimum: got 0, want 0"}},
		{"both bounds", d7 + `"maximum":10,"exclusiveMaximum":5`, `11`,
			[]string{"maximum: got 11, want 10", "exclusiveMaximum: got 11, want 5"}},
		{"multipleOf", `"multipleOf":5`, `12`, []string{"multipleOf: got 12, want 5"}},
		{"multipleOf decimal exact", `"multipleOf":0.1`, `0.3`, nil},
		{"multipleOf decimal bad", `"multipleOf":0.01`, `0.125`, []string{"multipleOf: got 0.125, want 0.01"}},
		{"big integer above maximum", `"maximum":9223372036854775807`, `9223372036854775808`,
			[]string{"maximum: got 9223372036854775808, want 9223372036854775807"}},
		{"big integer at maximum", `"maximum":9223372036854775807`, `9223372036854775807`, nil},
		{"huge numbers compare exactly", `"maximum":123456789012345678901234567890`, `123456789012345678901234567891`,
			[]string{"maximum: got 123456789012345678901234567891, want 123456789012345678901234567890"}},
		{"exponent", `"maximum":1e3`, `1001`, []string{"maximum: got 1001, want 1000"}},
		{"numbers print in plain decimals", `"maximum":1.50`, `20.0`, []string{"maximum: got 20, want 1.5"}},
		{"small exponent", `"minimum":1`, `25e-3`, []string{"minimum: got 0.025, want 1"}},
		{"negative zero", `"minimum":1`, `-0`, []string{"minimum: got 0, want 1"}},
		{"long numbers print as written", `"maximum":1`, `1e60`, []string{"maximum: got 1e60, want 1"}},
		{"absurd exponent is out of range", `"maximum":10`, `1e999999999`, []string{"number out of range"}},
		{"absurd exponent without numeric keywords", `"type":"number"`, `1e999999999`, nil},
		{"strings are not numbers", `"maximum":1`, `"100"`, nil},
	})
}

func TestStrings(t *testing.T) {
	run(t, []validateCase{
		{"minLength", `"minLength":3`, `"ab"`, []string{"minLength: got 2, want 3"}},
		{"maxLength", `"maxLength":3`, `"abcd"`, []string{"maxLength: got 4, want 3"}},
		{"length in code points", `"maxLength":2`, `"héé"`, []string{"maxLength: got 3, want 2"}},
		{"emoji is one code point", `"maxLength":1,"minLength":1`, `"😀"`, nil},
		{"combining mark counts", `"maxLength":1`, `"e\u0301"`, []string{"maxLength: got 2, want 1"}},
		{"pattern ok", `"pattern":"^[0-2][0-9]:[0-5][0-9]$"`, `"02:30"`, nil},
		{"pattern bad", `"pattern":"^[0-2][0-9]:[0-5][0-9]$"`, `"25:00:00"`,
			[]string{`'25:00:00' does not match pattern '^[0-2][0-9]:[0-5][0-9]$'`}},
		{"pattern is unanchored", `"pattern":"b"`, `"abc"`, nil},
		{"pattern quotes", `"pattern":"^a$"`, `"it's \"x\"\n"`, []string{`'it\'s "x"\n' does not match pattern '^a$'`}},
		{"lengths ignore non-strings", `"minLength":3`, `1`, nil},
	})
}

func TestFormats(t *testing.T) {
	run(t, []validateCase{
		{"email ok", d7 + `"format":"email"`, `"a.b+c@example.com"`, nil},
		{"email bad", d7 + `"format":"email"`, `"nope"`, []string{"'nope' is not valid email: missing @"}},
		{"email bad domain", d7 + `"format":"email"`, `"a@-x.com"`, []string{"'a@-x.com' is not valid email: invalid domain after @"}},
		{"email address literal", d7 + `"format":"email"`, `"a@[127.0.0.1]"`, nil},
		{"uri ok", d7 + `"format":"uri"`, `"https://example.com/x?y=1"`, nil},
		{"uri relative", d7 + `"format":"uri"`, `"/x"`, []string{"'/x' is not valid uri: not an absolute URI"}},
		{"date-time ok", d7 + `"format":"date-time"`, `"2024-02-29T23:59:60Z"`, nil},
		{"date-time offset", d7 + `"format":"date-time"`, `"2024-01-31t09:30:00.123+01:00"`, nil},
		{"date-time no such date", d7 + `"format":"date-time"`, `"2023-02-29T00:00:00Z"`,
			[]string{"'2023-02-29T00:00:00Z' is not valid date-time: no such date"}},
		{"date-time no zone", d7 + `"format":"date-time"`, `"2024-01-31T09:30:00"`,
			[]string{"'2024-01-31T09:30:00' is not valid date-time: want RFC 3339, for example 2024-01-31T09:30:00Z"}},
		{"ipv4 ok", d7 + `"format":"ipv4"`, `"10.0.0.1"`, nil},
		{"ipv4 leading zero", d7 + `"format":"ipv4"`, `"10.0.0.01"`, []string{"'10.0.0.01' is not valid ipv4: not an IPv4 address"}},
		{"ipv6 ok", d7 + `"format":"ipv6"`, `"::ffff:10.0.0.1"`, nil},
		{"ipv6 bad", d7 + `"format":"ipv6"`, `"10.0.0.1"`, []string{"'10.0.0.1' is not valid ipv6: not an IPv6 address"}},
		{"uuid ok", d7 + `"format":"uuid"`, `"80d0a3c5-df7f-4144-a6ca-6d2be96b9701"`, nil},
		{"uuid bad", d7 + `"format":"uuid"`, `"80d0a3c5"`, []string{"'80d0a3c5' is not valid uuid: want 8-4-4-4-12 hexadecimal digits"}},
		{"unknown format accepted", d7 + `"format":"color"`, `"puce"`, nil},
		{"draft-04 asserts", d4 + `"format":"ipv4"`, `"x"`, []string{"'x' is not valid ipv4: not an IPv4 address"}},
		{"2019-09 annotates", d19 + `"format":"ipv4"`, `"x"`, nil},
		{"2020-12 annotates", d20 + `"format":"email"`, `"x"`, nil},
		{"non-strings pass", d7 + `"format":"email"`, `5`, nil},
	})
}

func TestObjects(t *testing.T) {
	run(t, []validateCase{
		{"required", `"required":["a","b"]`, `{"a":1}`, []string{"missing property 'b'"}},
		{"required many", `"required":["a","b","c"]`, `{"b":1}`, []string{"missing properties 'a', 'c'"}},
		{"required ignores non-objects", `"required":["a"]`, `[]`, nil},
		{"additionalProperties false", `"properties":{"a":{}},"additionalProperties":false`, `{"a":1,"z":1,"b":2}`,
			[]string{"additional properties 'b', 'z' not allowed"}},
		{"additionalProperties schema", `"properties":{"a":{}},"additionalProperties":{"type":"integer"}`, `{"a":"x","b":"y"}`,
			[]string{"/b: got string, want integer"}},
		{"patternProperties", `"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false`, `{"x-a":1,"y":1}`,
			[]string{"/x-a: got number, want string", "additional properties 'y' not allowed"}},
		{"properties and patternProperties both apply", `"properties":{"x-a":{"maxLength":1}},"patternProperties":{"^x-":{"minLength":3}}`, `{"x-a":"ab"}`,
			[]string{"/x-a: maxLength: got 2, want 1", "/x-a: minLength: got 2, want 3"}},
		{"minProperties", `"minProperties":2`, `{"a":1}`, []string{"minProperties: got 1, want 2"}},
		{"maxProperties", `"maxProperties":1`, `{"a":1,"b":2}`, []string{"maxProperties: got 2, want 1"}},
		{"dependencies list", `"dependencies":{"a":["b","c"]}`, `{"a":1,"c":1}`, []string{"properties 'b' required, if 'a' exists"}},
		{"dependencies list absent trigger", `"dependencies":{"a":["b"]}`, `{"c":1}`, nil},
		{"dependencies schema", `"dependencies":{"a":{"required":["b"]}}`, `{"a":1}`, []string{"missing property 'b'"}},
		{"dependentRequired", d19 + `"dependentRequired":{"a":["b"]}`, `{"a":1}`, []string{"properties 'b' required, if 'a' exists"}},
		{"dependentRequired ignored before 2019", d7 + `"dependentRequired":{"a":["b"]}`, `{"a":1}`, nil},
		{"dependentSchemas", d20 + `"dependentSchemas":{"a":{"properties":{"b":{"type":"string"}}}}`, `{"a":1,"b":2}`,
			[]string{"/b: got number, want string"}},
		{"propertyNames", d6 + `"propertyNames":{"maxLength":3}`, `{"abcd":1,"ab":2}`, []string{"invalid propertyName 'abcd'"}},
		{"propertyNames ignored in draft-04", d4 + `"propertyNames":{"maxLength":3}`, `{"abcd":1}`, nil},
		{"false property schema", d7 + `"properties":{"a":false}`, `{"a":1}`, []string{"/a: not allowed"}},
		{"keys with dots and slashes", `"properties":{"a.b/c":{"type":"string"}}`, `{"a.b/c":1}`, []string{"/a.b/c: got number, want string"}},
	})
}

func TestArrays(t *testing.T) {
	run(t, []validateCase{
		{"items schema", `"items":{"type":"string"}`, `["a",1,"b",2]`,
			[]string{"/1: got number, want string", "/3: got number, want string"}},
		{"minItems", `"minItems":2`, `[1]`, []string{"minItems: got 1, want 2"}},
		{"maxItems", `"maxItems":1`, `[1,2]`, []string{"maxItems: got 2, want 1"}},
		{"uniqueItems", `"uniqueItems":true`, `["a","b","a"]`, []string{"items at 0 and 2 are equal"}},
		{"uniqueItems numbers by value", `"uniqueItems":true`, `[1,2,1.0]`, []string{"items at 0 and 2 are equal"}},
		{"uniqueItems deep", `"uniqueItems":true`, `[{"a":[1]},{"a":[1.00]}]`, []string{"items at 0 and 1 are equal"}},
		{"uniqueItems distinct", `"uniqueItems":true`, `[1,"1",true,null,[1],{"a":1}]`, nil},
		{"uniqueItems false", `"uniqueItems":false`, `[1,1]`, nil},
		{"draft-04 tuple", d4 + `"items":[{"type":"string"},{"type":"integer"}]`, `["a","b",3]`,
			[]string{"/1: got string, want integer"}},
		{"draft-04 additionalItems false", d4 + `"items":[{}],"additionalItems":false`, `[1,2,3]`,
			[]string{"last 2 additionalItem(s) not allowed"}},
		{"draft-07 additionalItems schema", d7 + `"items":[{}],"additionalItems":{"type":"string"}`, `[1,2]`,
			[]string{"/1: got number, want string"}},
		{"additionalItems ignored without tuple", d7 + `"items":{},"additionalItems":false`, `[1,2]`, nil},
		{"2020 prefixItems", d20 + `"prefixItems":[{"type":"string"}],"items":{"type":"integer"}`, `["a",1,"b"]`,
			[]string{"/2: got string, want integer"}},
		{"2020 items false", d20 + `"prefixItems":[{}],"items":false`, `[1,2]`, []string{"got 2 items, want at most 1"}},
		{"prefixItems ignored before 2020", d19 + `"prefixItems":[{"type":"string"}]`, `[1]`, nil},
		{"contains", d6 + `"contains":{"type":"string"}`, `[1,2]`, []string{"no items match contains schema"}},
		{"contains ok", d6 + `"contains":{"type":"string"}`, `[1,"a"]`, nil},
		{"contains ignored in draft-04", d4 + `"contains":{"type":"string"}`, `[1]`, nil},
		{"minContains", d19 + `"contains":{"type":"string"},"minContains":2`, `["a",1]`,
			[]string{"min 2 items required to match contains schema, but matched 1"}},
		{"maxContains", d20 + `"contains":{"type":"string"},"maxContains":1`, `["a","b"]`,
			[]string{"max 1 items required to match contains schema, but matched 2"}},
		{"minContains 0", d20 + `"contains":{"type":"string"},"minContains":0`, `[1]`, nil},
	})
}

func TestApplicators(t *testing.T) {
	run(t, []validateCase{
		{"allOf reports each", `"allOf":[{"minimum":5},{"multipleOf":2}]`, `3`,
			[]string{"minimum: got 3, want 5", "multipleOf: got 3, want 2"}},
		{"anyOf ok", `"anyOf":[{"type":"string"},{"type":"integer"}]`, `1`, nil},
		{"anyOf one problem", `"anyOf":[{"type":"string"},{"minimum":5}]`, `1`,
			[]string{"anyOf failed: the value matches none of the alternatives"}},
		{"oneOf ok", `"oneOf":[{"type":"string"},{"type":"integer"}]`, `1`, nil},
		{"oneOf none", `"oneOf":[{"type":"string"},{"type":"boolean"}]`, `1`,
			[]string{"oneOf failed: the value matches none of the alternatives"}},
		{"oneOf two", `"oneOf":[{"type":"number"},{"type":"integer"},{"type":"string"}]`, `1`,
			[]string{"oneOf: matched 2 subschemas, want exactly 1"}},
		{"not", `"not":{"type":"string"}`, `"a"`, []string{"not failed: the value must not match the schema"}},
		{"not ok", `"not":{"type":"string"}`, `1`, nil},
		{"if then", d7 + `"if":{"properties":{"tier":{"const":"ha"}}},"then":{"required":["zones"]},"else":{"maxProperties":1}`,
			`{"tier":"ha"}`, []string{"missing property 'zones'"}},
		{"if else", d7 + `"if":{"properties":{"tier":{"const":"ha"}}},"then":{"required":["zones"]},"else":{"maxProperties":1}`,
			`{"tier":"x","a":1}`, []string{"maxProperties: got 2, want 1"}},
		{"then alone without if", d7 + `"then":false`, `1`, nil},
		{"if ignored in draft-06", d6 + `"if":true,"then":false`, `1`, nil},
		{"empty schema", d7[:len(d7)-1], `1`, nil},
		{"true schema", d7 + `"properties":{"a":true},"items":true`, `{"a":[1]}`, nil},
		{"false items", d7 + `"items":false`, `[1]`, []string{"got 1 items, want at most 0"}},
	})
}

func TestRef(t *testing.T) {
	run(t, []validateCase{
		{"definitions", d4 + `"definitions":{"gb":{"type":"integer","maximum":10}},"properties":{"size":{"$ref":"#/definitions/gb"}}`,
			`{"size":11}`, []string{"/size: maximum: got 11, want 10"}},
		{"$defs", d20 + `"$defs":{"gb":{"type":"integer"}},"properties":{"size":{"$ref":"#/$defs/gb"}}`,
			`{"size":"x"}`, []string{"/size: got string, want integer"}},
		{"nested refs", d7 + `"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/c"},"c":{"minimum":3}},"$ref":"#/definitions/a"`,
			`2`, []string{"minimum: got 2, want 3"}},
		{"siblings ignored before 2019", d7 + `"definitions":{"a":{"type":"integer"}},"$ref":"#/definitions/a","maximum":1`, `5`, nil},
		{"siblings apply from 2019", d19 + `"$defs":{"a":{"type":"integer"}},"$ref":"#/$defs/a","maximum":1`, `5`,
			[]string{"maximum: got 5, want 1"}},
		{"recursive tree", d7 + `"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}`,
			`{"name":"a","children":[{"name":"b","children":[{"name":3}]}]}`, []string{"/children/0/children/0/name: got number, want string"}},
		{"pointer escapes", d7 + `"definitions":{"a/b":{"type":"string"},"c~d":{"type":"integer"},"e f":{"type":"null"}},` +
			`"properties":{"x":{"$ref":"#/definitions/a~1b"},"y":{"$ref":"#/definitions/c~0d"},"z":{"$ref":"#/definitions/e%20f"}}`,
			`{"x":1,"y":"s","z":0}`, []string{"/x: got number, want string", "/y: got string, want integer", "/z: got number, want null"}},
		{"ref into an array", d7 + `"allOf":[{"minimum":1}],"properties":{"n":{"$ref":"#/allOf/0"}}`, `{"n":0}`,
			[]string{"/n: minimum: got 0, want 1"}},
		{"ref to own $id", d7 + `"$id":"https://example.com/plan.json","definitions":{"a":{"type":"string"}},"properties":{"x":{"$ref":"https://example.com/plan.json#/definitions/a"}}`,
			`{"x":1}`, []string{"/x: got number, want string"}},
		{"$anchor", d20 + `"$defs":{"a":{"$anchor":"gb","type":"integer"}},"properties":{"x":{"$ref":"#gb"}}`,
			`{"x":"s"}`, []string{"/x: got string, want integer"}},
		{"draft-07 plain-name $id", d7 + `"definitions":{"a":{"$id":"#gb","type":"integer"}},"properties":{"x":{"$ref":"#gb"}}`,
			`{"x":"s"}`, []string{"/x: got string, want integer"}},
		{"id is not a problem", d4 + `"id":"urn:x","type":"string"`, `"a"`, nil},
	})
}

func TestRefCycleWithoutProgressIsAnError(t *testing.T) {
	for _, schema := range []string{
		`{"$ref":"#"}`,
		`{"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"allOf":[{"$ref":"#/definitions/a"}]}},"$ref":"#/definitions/a"}`,
	} {
		s, err := Compile([]byte(schema))
		assert.NilError(t, err)
		_, err = s.Validate([]byte(`{}`))
		assert.ErrorContains(t, err, "refers to itself")
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{`, "schema is not valid JSON"},
		{`{} {}`, "schema is not valid JSON"},
		{`{"$ref":"https://example.com/s.json"}`, `external reference "https://example.com/s.json" is not allowed in a plan schema`},
		{`{"properties":{"a":{"$ref":"other.json#/x"}}}`, `external reference "other.json#/x" is not allowed in a plan schema`},
		{`{"$ref":"#/definitions/missing"}`, "#/definitions/missing: reference points to nothing"},
		{`{"$ref":"#nowhere"}`, `#/$ref: reference "#nowhere" names no anchor in the schema`},
		{`{"$ref":5}`, "#/$ref: must be a string"},
		{`{"type":"text"}`, `#/type: unknown type "text"`},
		{`{"type":5}`, "#/type: must be a type name or an array of them"},
		{`{"maximum":"10"}`, "#/maximum: must be a number"},
		{`{"minLength":-1}`, "#/minLength: must be a non-negative integer"},
		{`{"maxItems":1.5}`, "#/maxItems: must be a non-negative integer"},
		{`{"multipleOf":0}`, "#/multipleOf: must be greater than 0"},
		{`{"pattern":"(?<=a)b"}`, "#/pattern: invalid regular expression"},
		{`{"patternProperties":{"[":{}}}`, "#/patternProperties: invalid regular expression"},
		{`{"required":"a"}`, "#/required: must be an array of strings"},
		{`{"enum":"a"}`, "#/enum: must be an array"},
		{`{"properties":[]}`, "#/properties: must be an object of schemas"},
		{`{"properties":{"a":1}}`, "#/properties/a: a schema must be an object or a boolean, not number"},
		{`{"properties":{"a":true}}`, "#/properties/a: a schema must be an object in draft-04"},
		{`{"anyOf":[]}`, "#/anyOf: must be a non-empty array of schemas"},
		{`{"exclusiveMaximum":5}`, "#/exclusiveMaximum: must be a boolean in draft-04"},
		{`{` + d6 + `"exclusiveMaximum":true}`, "#/exclusiveMaximum: must be a number"},
		{`{` + d20 + `"items":[{}]}`, "#/items: must be a schema in 2020-12"},
		{`{"$schema":"http://json-schema.org/schema#"}`, `unsupported $schema "http://json-schema.org/schema#"`},
		{`{"maximum":1e999999}`, "#/maximum: must be a number of reasonable size"},
	} {
		_, err := Compile([]byte(tc.schema))
		assert.Check(t, is.ErrorContains(err, tc.want), tc.schema)
	}
}

func TestDraftDetection(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   draft
	}{
		{`{}`, draft4},
		{`true`, draft4},
		{`{"$schema":"http://json-schema.org/draft-04/schema#"}`, draft4},
		{`{"$schema":"http://json-schema.org/draft-06/schema"}`, draft6},
		{`{"$schema":"https://json-schema.org/draft-07/schema#"}`, draft7},
		{`{"$schema":"https://json-schema.org/draft/2019-09/schema"}`, draft2019},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema#"}`, draft2020},
	} {
		s, err := Compile([]byte(tc.schema))
		if tc.schema == `true` {
			// A boolean root is not a draft-04 schema.
			assert.ErrorContains(t, err, "draft-04")
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, s.draft, tc.want, tc.schema)
	}
}

func TestValidateRejectsInvalidInstance(t *testing.T) {
	s, err := Compile([]byte(`{}`))
	assert.NilError(t, err)
	_, err = s.Validate([]byte(`{"a":`))
	assert.ErrorContains(t, err, "instance is not valid JSON")
	_, err = s.Validate([]byte(`1 2`))
	assert.ErrorContains(t, err, "instance is not valid JSON")
}

func TestValidateValueAcceptsFloats(t *testing.T) {
	s, err := Compile([]byte(`{"properties":{"n":{"type":"integer","maximum":10}},"uniqueItems":true}`))
	assert.NilError(t, err)
	problems, err := s.ValidateValue(map[string]any{"n": 11.0})
	assert.NilError(t, err)
	assert.DeepEqual(t, problems, []Problem{{Path: []string{"n"}, Message: "maximum: got 11, want 10"}})
}

func TestSchemaIsSafeForConcurrentUse(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"pattern":"^a+$"}}}`))
	assert.NilError(t, err)
	done := make(chan []Problem)
	for i := 0; i < 8; i++ {
		go func() {
			p, _ := s.Validate([]byte(`{"a":"b"}`))
			done <- p
		}()
	}
	for i := 0; i < 8; i++ {
		assert.Check(t, is.Len(<-done, 1))
	}
}
