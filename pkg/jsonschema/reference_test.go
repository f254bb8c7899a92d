package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"sigs.k8s.io/yaml"
)

// The tests in this file hold this package to the verdicts of an established
// validator, github.com/santhosh-tekuri/jsonschema, on the demo catalog's plan
// schemas and on schemas that exercise every supported keyword.

// demoSchemas returns the parameter schemas of the test broker's demo catalog,
// named by service, plan and operation.
func demoSchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	y, err := os.ReadFile("../../test/broker/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Services []struct {
			Name  string
			Plans []struct {
				Name    string
				Schemas map[string]map[string]struct {
					Parameters json.RawMessage
				}
			}
		}
	}
	if err := json.Unmarshal(j, &cat); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, s := range cat.Services {
		for _, p := range s.Plans {
			for kind, ops := range p.Schemas {
				for op, sch := range ops {
					if len(sch.Parameters) > 0 {
						out[s.Name+"/"+p.Name+"/"+kind+"/"+op] = sch.Parameters
					}
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d schemas in the demo catalog", len(out))
	}
	return out
}

// referenceValidator compiles a schema with the reference library, configured as
// kubectl-catalog configured it: draft-04 by default, no external references.
type referenceValidator struct{ s *santhosh.Schema }

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not allowed in a plan schema", url)
}

func compileReference(schema []byte) (*referenceValidator, error) {
	doc, err := santhosh.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := santhosh.NewCompiler()
	c.DefaultDraft(santhosh.Draft4)
	c.UseLoader(refusingLoader{})
	if err := c.AddResource("urn:test:schema", doc); err != nil {
		return nil, err
	}
	s, err := c.Compile("urn:test:schema")
	if err != nil {
		return nil, err
	}
	return &referenceValidator{s}, nil
}

// validate returns the reference library's leaf messages, prefixed by the
// instance location as this package's Problem.String does.
func (r *referenceValidator) validate(t *testing.T, instance []byte) []string {
	doc, err := santhosh.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		t.Fatal(err)
	}
	err = r.s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *santhosh.ValidationError
	if !errors.As(err, &ve) {
		t.Fatal(err)
	}
	p := message.NewPrinter(language.English)
	var out []string
	var walk func(*santhosh.ValidationError)
	walk = func(ve *santhosh.ValidationError) {
		if len(ve.Causes) > 0 {
			for _, c := range ve.Causes {
				walk(c)
			}
			return
		}
		out = append(out, Problem{Path: ve.InstanceLocation, Message: ve.ErrorKind.LocalizedString(p)}.String())
	}
	walk(ve)
	return out
}

// valuePool holds parameter values chosen to sit on both sides of the demo
// catalog's constraints, and to probe types, numbers and strings at their edges.
var valuePool = []string{
	`"x"`, `""`, `"16"`, `"13"`, `"pgcrypto"`, `"postgis"`, `"readwrite"`, `"readonly"`, `"admin"`,
	`"allkeys-lru"`, `"read"`, `"write"`, `"02:00-03:00"`, `"25:00-26:00"`, `"2:00-3:00"`, `"héllo"`,
	`0`, `1`, `-1`, `3`, `5`, `10`, `11`, `19`, `20`, `500`, `501`, `1.0`, `1.5`, `20.0`, `3e0`, `5e0`,
	`9223372036854775808`, `123456789012345678901234567890`, `0.1`, `-0`,
	`true`, `false`, `null`, `[]`, `["pgcrypto"]`, `["pgcrypto","pgcrypto"]`, `["pgcrypto","postgis"]`,
	`["nope"]`, `[1]`, `{}`, `{"a":1}`,
}

// instancesFor generates parameter objects for a schema: the empty object, each
// declared property with each pooled value, an undeclared property, and random
// combinations.
func instancesFor(schema json.RawMessage, rng *rand.Rand) []string {
	var s struct {
		Properties map[string]json.RawMessage
	}
	_ = json.Unmarshal(schema, &s)
	names := sortedKeys(s.Properties)
	names = append(names, "unknown")
	out := []string{`{}`, `[]`, `"x"`, `null`}
	for _, n := range names {
		for _, v := range valuePool {
			out = append(out, fmt.Sprintf(`{%q:%s}`, n, v))
		}
	}
	for i := 0; i < 200; i++ {
		var members []string
		for _, n := range names {
			if rng.Intn(2) == 0 {
				members = append(members, fmt.Sprintf(`%q:%s`, n, valuePool[rng.Intn(len(valuePool))]))
			}
		}
		out = append(out, "{"+strings.Join(members, ",")+"}")
	}
	return out
}

// normalizeReference maps the reference library's wording to this package's where
// they differ on purpose: numbers are printed as written, without digit grouping,
// and null as null.
func normalizeReference(msgs []string) []string {
	grouping := regexp.MustCompile(`(\d),(\d\d\d)`)
	out := make([]string, len(msgs))
	for i, m := range msgs {
		for grouping.MatchString(m) {
			m = grouping.ReplaceAllString(m, "$1$2")
		}
		out[i] = strings.ReplaceAll(m, "<nil>", "null")
	}
	sort.Strings(out)
	return out
}

func TestDemoCatalogAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	checked, compared := 0, 0
	for name, schema := range demoSchemas(t) {
		ref, err := compileReference(schema)
		if err != nil {
			t.Fatalf("%s: reference does not compile: %v", name, err)
		}
		ours, err := Compile(schema)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, inst := range instancesFor(schema, rng) {
			want := ref.validate(t, []byte(inst))
			problems, err := ours.Validate([]byte(inst))
			if err != nil {
				t.Fatalf("%s %s: %v", name, inst, err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			sort.Strings(got)
			checked++
			if (len(got) == 0) != (len(want) == 0) {
				t.Errorf("%s %s: verdict differs: got %q, reference %q", name, inst, got, want)
				continue
			}
			// Messages must match too, save for numbers the reference prints
			// in scientific notation.
			if strings.Contains(strings.Join(want, ""), "×") {
				continue
			}
			compared++
			if w := normalizeReference(want); strings.Join(got, "\n") != strings.Join(w, "\n") {
				t.Errorf("%s %s: messages differ:\n got %q\nwant %q", name, inst, got, w)
			}
		}
	}
	t.Logf("checked %d instances, compared messages of %d", checked, compared)
}

// keywordSchemas exercise every supported keyword in each draft.
var keywordSchemas = []string{
	`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10,"multipleOf":3},"s":{"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-z]+$"},"a":{"type":"array","minItems":1,"maxItems":2,"uniqueItems":true,"items":{"type":["string","integer"]}},"o":{"type":"object","minProperties":1,"maxProperties":1}},"required":["n"],"additionalProperties":false}`,
	`{"properties":{"n":{"type":"integer","minimum":1,"maximum":10,"multipleOf":3},"s":{"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-z]+$"},"a":{"type":"array","minItems":1,"maxItems":2,"uniqueItems":true,"items":{"type":["string","integer"]}},"o":{"type":"object","minProperties":1,"maxProperties":1}}}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"minimum":1,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":true},"a":{"items":[{"type":"string"},{"type":"integer"}],"additionalItems":false},"s":{"format":"ipv4"}},"dependencies":{"n":["s"],"a":{"required":["o"]}},"patternProperties":{"^x":{"type":"boolean"}}}`,
	`{"$schema":"http://json-schema.org/draft-06/schema#","properties":{"n":{"exclusiveMinimum":1,"exclusiveMaximum":10},"s":{"const":"abc"},"a":{"contains":{"type":"integer","minimum":5}},"o":{"propertyNames":{"pattern":"^[a-z]+$"}},"e":{"format":"email"}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/definitions/pos"},"s":{"anyOf":[{"type":"string","maxLength":2},{"type":"integer"}]},"a":{"oneOf":[{"type":"array","maxItems":1},{"type":"array","items":{"type":"string"}}]},"o":{"not":{"type":"object","required":["a"]}},"u":{"format":"uri"},"d":{"format":"date-time"}},"if":{"properties":{"n":{"const":3}},"required":["n"]},"then":{"required":["s"]},"else":{"properties":{"s":{"type":"string"}}}}`,
	`{"$schema":"https://json-schema.org/draft/2019-09/schema","$defs":{"tag":{"type":"string","enum":["a","b",null]}},"properties":{"n":{"type":"number","multipleOf":0.5},"s":{"$ref":"#/$defs/tag"},"a":{"contains":{"type":"integer"},"minContains":2,"maxContains":3},"o":{"$ref":"#","maxProperties":2},"i":{"format":"ipv6"}},"dependentRequired":{"n":["s"]},"dependentSchemas":{"a":{"properties":{"n":{"maximum":3}}}}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"prefixItems":[{"type":"integer"},{"type":"string"}],"items":false},"n":{"type":["integer","null"],"maximum":9223372036854775807},"s":{"allOf":[{"minLength":1},{"maxLength":3}]},"o":{"additionalProperties":{"type":"integer"},"properties":{"k":{"type":"string"}}},"e":{"enum":[{"a":1},[1,2],3]}},"propertyNames":{"maxLength":1}}`,
}

var keywordPool = []string{
	`0`, `1`, `2`, `3`, `4.5`, `6`, `9`, `10`, `11`, `1.0`, `3.0`, `9223372036854775807`, `9223372036854775808`,
	`""`, `"a"`, `"b"`, `"ab"`, `"abc"`, `"abcde"`, `"Abc"`, `"é"`, `"10.0.0.1"`, `"::1"`, `"a@b.example"`,
	`"https://example.com"`, `"2024-01-31T09:30:00Z"`, `"2024-13-01T00:00:00Z"`,
	`null`, `true`, `[]`, `[1]`, `[1,1]`, `[5,"a"]`, `["a",5]`, `[1,"a",3]`, `[5,6,7]`, `[1,2,3,4]`, `["x","y"]`, `[1,2]`,
	`{}`, `{"a":1}`, `{"a":1,"b":2}`, `{"k":"v","z":1}`, `{"Bad":1}`, `{"o":{}}`,
}

func TestKeywordSchemasAgreeWithReference(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	names := []string{"n", "s", "a", "o", "e", "u", "d", "i", "x1", "zz"}
	for i, schema := range keywordSchemas {
		ref, err := compileReference([]byte(schema))
		if err != nil {
			t.Fatalf("schema %d: reference does not compile: %v", i, err)
		}
		ours, err := Compile([]byte(schema))
		if err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
		instances := []string{`{}`, `[]`, `1`}
		for _, n := range names {
			for _, v := range keywordPool {
				instances = append(instances, fmt.Sprintf(`{%q:%s}`, n, v))
			}
		}
		for j := 0; j < 500; j++ {
			var members []string
			for _, n := range names {
				if rng.Intn(3) == 0 {
					members = append(members, fmt.Sprintf(`%q:%s`, n, keywordPool[rng.Intn(len(keywordPool))]))
				}
			}
			instances = append(instances, "{"+strings.Join(members, ",")+"}")
		}
		valid := 0
		for _, inst := range instances {
			want := ref.validate(t, []byte(inst))
			if len(want) == 0 {
				valid++
			}
			got, err := ours.Validate([]byte(inst))
			if err != nil {
				t.Fatalf("schema %d %s: %v", i, inst, err)
			}
			if (len(got) == 0) != (len(want) == 0) {
				t.Errorf("schema %d %s: verdict differs: got %v, reference %q", i, inst, got, want)
			}
		}
		t.Logf("schema %d: %d instances, %d valid", i, len(instances), valid)
	}
}

func TestExternalRefsRefusedLikeReference(t *testing.T) {
	for _, schema := range []string{
		`{"$ref":"https://example.com/schema.json"}`,
		`{"properties":{"a":{"$ref":"defs.json#/a"}}}`,
	} {
		_, refErr := compileReference([]byte(schema))
		check(t, refErr != nil, "reference accepted %s", schema)
		_, err := Compile([]byte(schema))
		check(t, err != nil && strings.Contains(err.Error(), "is not allowed in a plan schema"), "%s: %v", schema, err)
	}
}

func check(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}
