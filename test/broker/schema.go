package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxSchemaBytes is the spec's limit for one parameters schema.
const maxSchemaBytes = 64 * 1024

// paramSchema is one compiled parameters schema of a plan, kept together with
// its decoded source because the validator library does not apply defaults.
type paramSchema struct {
	compiled *jsonschema.Schema
	source   map[string]any
}

// compileParamSchema compiles a plan's parameters schema. The spec requires
// "$schema" and forbids external references, so both are enforced here: a
// catalog the broker accepts is one a conforming platform can use.
func compileParamSchema(raw json.RawMessage, where string) (*paramSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("%s: schema is %d bytes, the spec allows at most %d", where, len(raw), maxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: schema is not valid JSON: %w", where, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: schema must be a JSON object", where)
	}
	if s, _ := obj["$schema"].(string); s == "" {
		return nil, fmt.Errorf("%s: schema has no \"$schema\"; the OSB spec requires it", where)
	}
	c := jsonschema.NewCompiler()
	// No loader: any $ref outside the document fails to compile instead of
	// fetching something from the network.
	c.UseLoader(refusingLoader{})
	const url = "urn:test-broker:parameters"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%s: schema does not compile: %w", where, err)
	}
	var source map[string]any
	if err := json.Unmarshal(raw, &source); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &paramSchema{compiled: compiled, source: source}, nil
}

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not allowed in a plan schema", url)
}

// validate checks params (nil means "none sent") and returns an error whose
// text names the offending parameter, because that text becomes the
// user-facing description of a 400.
func (s *paramSchema) validate(params map[string]any) error {
	if s == nil {
		return nil
	}
	var doc any = map[string]any{}
	if params != nil {
		// Round-trip through the library's decoder so numbers are json.Number,
		// as the validator expects.
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return err
		}
	}
	err := s.compiled.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	printer := message.NewPrinter(language.English)
	var msgs []string
	collectLeaves(ve, printer, &msgs)
	sort.Strings(msgs)
	return errors.New(strings.Join(dedupe(msgs), "; "))
}

func collectLeaves(ve *jsonschema.ValidationError, p *message.Printer, out *[]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collectLeaves(c, p, out)
		}
		return
	}
	name := "parameters"
	if len(ve.InstanceLocation) > 0 {
		name = "parameter " + strings.Join(ve.InstanceLocation, ".")
	}
	*out = append(*out, fmt.Sprintf("%s: %s", name, ve.ErrorKind.LocalizedString(p)))
}

func dedupe(in []string) []string {
	var out []string
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// withDefaults returns params with the schema's "default" values filled in for
// properties the request left out, recursing into nested objects. Real
// brokers do this so that what GET instance reports is what was provisioned.
func (s *paramSchema) withDefaults(params map[string]any) map[string]any {
	if s == nil {
		return params
	}
	out := applyDefaults(s.source, params)
	if len(out) == 0 {
		return params
	}
	return out
}

func applyDefaults(schema map[string]any, params map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return params
	}
	out := make(map[string]any, len(params)+len(props))
	for k, v := range params {
		out[k] = v
	}
	for name, p := range props {
		sub, ok := p.(map[string]any)
		if !ok {
			continue
		}
		cur, present := out[name]
		if !present {
			if d, ok := sub["default"]; ok {
				out[name] = deepCopyJSON(d)
				continue
			}
			if _, isObj := sub["properties"]; isObj {
				if nested := applyDefaults(sub, nil); len(nested) > 0 {
					out[name] = nested
				}
			}
			continue
		}
		if m, ok := cur.(map[string]any); ok {
			out[name] = applyDefaults(sub, m)
		}
	}
	return out
}

func deepCopyJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}
