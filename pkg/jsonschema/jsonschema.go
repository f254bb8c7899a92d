// Package jsonschema validates JSON documents against a JSON Schema: the subset of
// drafts 04, 06, 07, 2019-09 and 2020-12 that Open Service Broker plan schemas use.
//
// A schema is self-contained: "$ref" may only point into the schema itself, and any
// other reference is a compile error, so validating never touches the network or the
// file system. The package does no work at program start: regular expressions are
// compiled when a schema is, and formats are checked by hand-written code.
//
// Unsupported: unevaluatedProperties, unevaluatedItems, $dynamicRef, $recursiveRef,
// the content* keywords, and "$id" as a base for resolving references inside
// subschemas (a "$ref" naming the root's own "$id" is understood).
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Problem is one way in which an instance fails its schema.
type Problem struct {
	// Path locates the failing value in the instance: object keys and array
	// indexes from the root. It is empty for the root itself.
	Path []string
	// Message says what is wrong, for example "maximum: got 11, want 10".
	Message string
	// Missing names the properties of the object at Path that "required",
	// "dependentRequired" or "dependencies" ask for and the object lacks; nil for
	// every other problem.
	Missing []string
}

func (p Problem) String() string {
	if len(p.Path) == 0 {
		return p.Message
	}
	return "/" + strings.Join(p.Path, "/") + ": " + p.Message
}

// Schema is a compiled schema. It is safe for concurrent use.
type Schema struct {
	root  *node
	draft draft
}

// Compile parses and compiles a schema. It fails when the schema is not JSON, when a
// keyword has a value of the wrong kind, when a pattern is not a valid regular
// expression, or when a reference cannot be resolved within the schema.
func Compile(schema []byte) (*Schema, error) {
	doc, err := decode(schema)
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	d := draft4
	var rootID string
	if obj, ok := doc.(map[string]any); ok {
		if v, ok := obj["$schema"]; ok {
			s, ok := v.(string)
			if !ok {
				return nil, errors.New(`#/$schema: must be a string`)
			}
			if d, ok = draftOf(s); !ok {
				return nil, fmt.Errorf("unsupported $schema %q: want draft-04, draft-06, draft-07, 2019-09 or 2020-12", s)
			}
		}
		idKey := "$id"
		if d == draft4 {
			idKey = "id"
		}
		rootID, _ = obj[idKey].(string)
	}
	c := &compiler{doc: doc, draft: d, rootID: stripFragment(rootID), nodes: map[string]*node{}}
	root, err := c.compileAt("")
	if err != nil {
		return nil, err
	}
	return &Schema{root: root, draft: d}, nil
}

// Validate checks an instance, given as JSON, against the schema. It returns the
// problems in the order they were found, and an error only when the
// instance is not JSON or the schema loops without consuming the instance.
func (s *Schema) Validate(instance []byte) ([]Problem, error) {
	v, err := decode(instance)
	if err != nil {
		return nil, fmt.Errorf("instance is not valid JSON: %w", err)
	}
	return s.ValidateValue(v)
}

// ValidateValue is Validate for an instance already decoded by encoding/json. Numbers
// should be json.Number (json.Decoder.UseNumber) so that they compare exactly;
// float64 is accepted too.
func (s *Schema) ValidateValue(instance any) ([]Problem, error) {
	vs := &validation{}
	vs.validate(s.root, instance, nil, nil)
	if vs.err != nil {
		return nil, vs.err
	}
	return vs.problems, nil
}

// ValidateSupplied is ValidateValue for an object that more properties of the root
// can be added to: a property of the root object that a "required",
// "dependentRequired" or "dependencies" asks for, that the instance lacks and that
// supply offers, counts as present, at any depth of allOf, anyOf, oneOf, then, else,
// dependentSchemas and $ref. It returns those properties (sorted), to be added to the
// instance: only those of the subschemas the outcome rests on (the first alternative of
// an anyOf that passes, the one of a oneOf), and an anyOf or oneOf that the instance
// satisfies as it is takes nothing. A "not" and the condition of an "if" judge the
// instance as it is. Adding the properties can change what other keywords say of the
// object, so the caller adds them and validates again, until nothing more is supplied:
// a validation that supplies nothing is the plain one.
func (s *Schema) ValidateSupplied(instance any, supply func(name string) bool) ([]string, []Problem, error) {
	vs := &validation{supply: supply}
	vs.validate(s.root, instance, nil, nil)
	if vs.err != nil {
		return nil, nil, vs.err
	}
	if len(vs.supplied) == 0 {
		return nil, vs.problems, nil
	}
	return sortedKeys(vs.supplied), vs.problems, nil
}

// decode parses one JSON value, keeping numbers as json.Number, and rejects
// trailing data.
func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

type draft int

const (
	draft4    draft = 4
	draft6    draft = 6
	draft7    draft = 7
	draft2019 draft = 2019
	draft2020 draft = 2020
)

// draftOf maps a "$schema" URI to its draft. Both http and https, with or without
// the empty fragment, are accepted.
func draftOf(uri string) (draft, bool) {
	u := strings.TrimSuffix(uri, "#")
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	switch u {
	case "json-schema.org/draft-04/schema":
		return draft4, true
	case "json-schema.org/draft-06/schema":
		return draft6, true
	case "json-schema.org/draft-07/schema":
		return draft7, true
	case "json-schema.org/draft/2019-09/schema":
		return draft2019, true
	case "json-schema.org/draft/2020-12/schema":
		return draft2020, true
	}
	return 0, false
}

func stripFragment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}
