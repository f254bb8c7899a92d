package jsonschema

import (
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// node is one compiled schema object or boolean schema.
type node struct {
	loc string // JSON pointer of the schema in its document, for messages

	// always is set for the boolean schemas true and false; nothing else is.
	always *bool

	ref *node

	types  []string // in the order the messages list them; "integer" may stand alone
	enum   []any
	hasEn  bool
	konst  any
	hasCon bool

	minimum, maximum          *number
	exclusiveMin, exclusiveMx *number
	multipleOf                *number

	minLength, maxLength int // -1 when absent
	pattern              *regexp.Regexp
	format               string

	required          []string
	properties        map[string]*node
	patternProperties []patternNode
	additionalProps   *node
	minProps          int
	maxProps          int
	dependentRequired map[string][]string
	dependentSchemas  map[string]*node
	propertyNames     *node

	prefixItems []*node
	items       *node // the items after prefixItems; all items when there are none
	tupleRest   bool  // items came from additionalItems: report "additionalItem(s)"
	contains    *node
	minContains int // -1 when absent
	maxContains int
	minItems    int
	maxItems    int
	uniqueItems bool

	allOf, anyOf, oneOf []*node
	not                 *node
	ifN, thenN, elseN   *node
}

type patternNode struct {
	re *regexp.Regexp
	n  *node
}

// number is a numeric keyword value: exact for comparisons, literal for messages.
type number struct {
	rat *big.Rat
	lit string
}

type compiler struct {
	doc     any
	draft   draft
	rootID  string
	nodes   map[string]*node // by JSON pointer, so a reference cycle ends in a known node
	anchors map[string]string
}

type schemaError struct {
	loc, msg string
}

func (e *schemaError) Error() string { return "#" + e.loc + ": " + e.msg }

// compileAt compiles the schema at a JSON pointer of the document.
func (c *compiler) compileAt(ptr string) (*node, error) {
	if n, ok := c.nodes[ptr]; ok {
		return n, nil
	}
	v, err := c.resolvePointer(ptr)
	if err != nil {
		return nil, err
	}
	n := &node{loc: ptr, minLength: -1, maxLength: -1, minProps: -1, maxProps: -1,
		minItems: -1, maxItems: -1, minContains: -1, maxContains: -1}
	c.nodes[ptr] = n
	switch v := v.(type) {
	case bool:
		if c.draft == draft4 {
			return nil, &schemaError{ptr, "a schema must be an object in draft-04"}
		}
		n.always = &v
		return n, nil
	case map[string]any:
		return n, c.compileObject(n, v)
	}
	return nil, &schemaError{ptr, fmt.Sprintf("a schema must be an object or a boolean, not %s", jsonType(v))}
}

var typeNames = []string{"null", "boolean", "number", "integer", "string", "array", "object"}

func parseTypes(v any) ([]string, error) {
	var names []string
	switch v := v.(type) {
	case string:
		names = []string{v}
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("must be a type name or an array of them")
			}
			names = append(names, s)
		}
	default:
		return nil, fmt.Errorf("must be a type name or an array of them")
	}
	var out []string
	for _, t := range typeNames {
		for _, name := range names {
			if name == t {
				out = append(out, t)
				break
			}
		}
	}
	for _, name := range names {
		if !contains(typeNames, name) {
			return nil, fmt.Errorf("unknown type %q", name)
		}
	}
	return out, nil
}

// refPointer resolves a "$ref" to a JSON pointer into the document.
func (c *compiler) refPointer(ref, at string) (string, error) {
	base, frag, _ := strings.Cut(ref, "#")
	if base != "" && (c.rootID == "" || base != c.rootID) {
		return "", fmt.Errorf("external reference %q is not allowed in a plan schema", ref)
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return "", &schemaError{at, fmt.Sprintf("invalid reference %q: %v", ref, err)}
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		return frag, nil
	}
	if ptr, ok := c.anchor(frag); ok {
		return ptr, nil
	}
	return "", &schemaError{at, fmt.Sprintf("reference %q names no anchor in the schema", ref)}
}

// anchor finds a plain-name fragment: "$anchor" from 2019-09 on, an "$id" (or
// draft-04 "id") of the form "#name" before.
func (c *compiler) anchor(name string) (string, bool) {
	if c.anchors == nil {
		c.anchors = map[string]string{}
		c.collectAnchors(c.doc, "")
	}
	ptr, ok := c.anchors[name]
	return ptr, ok
}

func (c *compiler) collectAnchors(v any, ptr string) {
	switch v := v.(type) {
	case map[string]any:
		if c.draft >= draft2019 {
			if a, ok := v["$anchor"].(string); ok {
				c.anchors[a] = ptr
			}
		} else {
			key := "$id"
			if c.draft == draft4 {
				key = "id"
			}
			if id, ok := v[key].(string); ok && strings.HasPrefix(id, "#") {
				c.anchors[id[1:]] = ptr
			}
		}
		for k, x := range v {
			switch k {
			case "enum", "const", "default", "examples":
				continue // data, not schemas
			}
			c.collectAnchors(x, ptr+"/"+escapeToken(k))
		}
	case []any:
		for i, x := range v {
			c.collectAnchors(x, ptr+"/"+strconv.Itoa(i))
		}
	}
}

// resolvePointer finds the value at a JSON pointer (RFC 6901) in the document.
func (c *compiler) resolvePointer(ptr string) (any, error) {
	v := c.doc
	if ptr == "" {
		return v, nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, &schemaError{ptr, "reference points to nothing"}
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || (len(tok) > 1 && tok[0] == '0') {
				return nil, &schemaError{ptr, "reference points to nothing"}
			}
			v = x[i]
		default:
			return nil, &schemaError{ptr, "reference points to nothing"}
		}
	}
	return v, nil
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func stringList(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
