package jsonschema

import (
	"encoding/json"
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

func (c *compiler) compileObject(n *node, obj map[string]any) error {
	kw := func(name string) (any, bool) {
		v, ok := obj[name]
		return v, ok
	}
	loc := func(name string) string { return n.loc + "/" + escapeToken(name) }
	bad := func(name, want string) error {
		return &schemaError{loc(name), "must be " + want}
	}
	sub := func(name string) (*node, error) {
		if _, ok := obj[name]; !ok {
			return nil, nil
		}
		return c.compileAt(loc(name))
	}
	subList := func(name string) ([]*node, error) {
		v, ok := obj[name]
		if !ok {
			return nil, nil
		}
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return nil, bad(name, "a non-empty array of schemas")
		}
		out := make([]*node, len(arr))
		for i := range arr {
			s, err := c.compileAt(loc(name) + "/" + strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	subMap := func(name string) (map[string]*node, error) {
		v, ok := obj[name]
		if !ok {
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad(name, "an object of schemas")
		}
		out := make(map[string]*node, len(m))
		for k := range m {
			s, err := c.compileAt(loc(name) + "/" + escapeToken(k))
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	}
	num := func(name string) (*number, error) {
		v, ok := obj[name]
		if !ok {
			return nil, nil
		}
		jn, ok := v.(json.Number)
		if !ok {
			return nil, bad(name, "a number")
		}
		r, ok := parseNumber(jn)
		if !ok {
			return nil, bad(name, "a number of reasonable size")
		}
		return &number{r, string(jn)}, nil
	}
	count := func(name string) (int, error) {
		v, ok := obj[name]
		if !ok {
			return -1, nil
		}
		if jn, ok := v.(json.Number); ok {
			if r, ok := parseNumber(jn); ok && r.IsInt() && r.Sign() >= 0 {
				if r.Num().IsInt64() && r.Num().Int64() <= 1<<31 {
					return int(r.Num().Int64()), nil
				}
				return 1 << 31, nil // larger than any instance can be
			}
		}
		return 0, bad(name, "a non-negative integer")
	}
	var err error

	if r, ok := kw("$ref"); ok {
		s, ok := r.(string)
		if !ok {
			return bad("$ref", "a string")
		}
		ptr, err := c.refPointer(s, loc("$ref"))
		if err != nil {
			return err
		}
		if n.ref, err = c.compileAt(ptr); err != nil {
			return err
		}
		if c.draft <= draft7 {
			// Before 2019-09 a reference replaces the whole schema object.
			return nil
		}
	}

	if t, ok := kw("type"); ok {
		if n.types, err = parseTypes(t); err != nil {
			return &schemaError{loc("type"), err.Error()}
		}
	}
	if e, ok := kw("enum"); ok {
		arr, ok := e.([]any)
		if !ok {
			return bad("enum", "an array")
		}
		n.enum, n.hasEn = arr, true
	}
	if c.draft >= draft6 {
		n.konst, n.hasCon = kw("const")
	}

	if n.minimum, err = num("minimum"); err != nil {
		return err
	}
	if n.maximum, err = num("maximum"); err != nil {
		return err
	}
	if c.draft == draft4 {
		// In draft-04 the exclusive keywords are booleans that make
		// minimum and maximum exclusive.
		for _, k := range []struct {
			name      string
			bound     **number
			exclusive **number
		}{{"exclusiveMinimum", &n.minimum, &n.exclusiveMin}, {"exclusiveMaximum", &n.maximum, &n.exclusiveMx}} {
			v, ok := kw(k.name)
			if !ok {
				continue
			}
			b, ok := v.(bool)
			if !ok {
				return bad(k.name, "a boolean in draft-04")
			}
			if b && *k.bound != nil {
				*k.exclusive, *k.bound = *k.bound, nil
			}
		}
	} else {
		if n.exclusiveMin, err = num("exclusiveMinimum"); err != nil {
			return err
		}
		if n.exclusiveMx, err = num("exclusiveMaximum"); err != nil {
			return err
		}
	}
	if n.multipleOf, err = num("multipleOf"); err != nil {
		return err
	}
	if n.multipleOf != nil && n.multipleOf.rat.Sign() <= 0 {
		return bad("multipleOf", "greater than 0")
	}

	if n.minLength, err = count("minLength"); err != nil {
		return err
	}
	if n.maxLength, err = count("maxLength"); err != nil {
		return err
	}
	if p, ok := kw("pattern"); ok {
		s, ok := p.(string)
		if !ok {
			return bad("pattern", "a string")
		}
		if n.pattern, err = regexp.Compile(s); err != nil {
			return &schemaError{loc("pattern"), fmt.Sprintf("invalid regular expression %q: %v", s, err)}
		}
	}
	if f, ok := kw("format"); ok {
		s, ok := f.(string)
		if !ok {
			return bad("format", "a string")
		}
		// From 2019-09 on, format is an annotation unless a vocabulary says
		// otherwise, and plan schemas declare none.
		if c.draft <= draft7 {
			n.format = s
		}
	}

	if r, ok := kw("required"); ok {
		if n.required, ok = stringList(r); !ok {
			return bad("required", "an array of strings")
		}
	}
	if n.properties, err = subMap("properties"); err != nil {
		return err
	}
	if v, ok := kw("patternProperties"); ok {
		m, ok := v.(map[string]any)
		if !ok {
			return bad("patternProperties", "an object of schemas")
		}
		for _, k := range sortedKeys(m) {
			re, err := regexp.Compile(k)
			if err != nil {
				return &schemaError{loc("patternProperties"), fmt.Sprintf("invalid regular expression %q: %v", k, err)}
			}
			s, err := c.compileAt(loc("patternProperties") + "/" + escapeToken(k))
			if err != nil {
				return err
			}
			n.patternProperties = append(n.patternProperties, patternNode{re, s})
		}
	}
	if n.additionalProps, err = c.boolOrSchema(obj, n.loc, "additionalProperties"); err != nil {
		return err
	}
	if n.minProps, err = count("minProperties"); err != nil {
		return err
	}
	if n.maxProps, err = count("maxProperties"); err != nil {
		return err
	}
	if err := c.compileDependencies(n, obj, loc); err != nil {
		return err
	}
	if c.draft >= draft6 {
		if n.propertyNames, err = sub("propertyNames"); err != nil {
			return err
		}
	}

	if err := c.compileItems(n, obj, loc, subList); err != nil {
		return err
	}
	if c.draft >= draft6 {
		if n.contains, err = sub("contains"); err != nil {
			return err
		}
	}
	if c.draft >= draft2019 {
		if n.minContains, err = count("minContains"); err != nil {
			return err
		}
		if n.maxContains, err = count("maxContains"); err != nil {
			return err
		}
	}
	if n.minItems, err = count("minItems"); err != nil {
		return err
	}
	if n.maxItems, err = count("maxItems"); err != nil {
		return err
	}
	if u, ok := kw("uniqueItems"); ok {
		if n.uniqueItems, ok = u.(bool); !ok {
			return bad("uniqueItems", "a boolean")
		}
	}

	if n.allOf, err = subList("allOf"); err != nil {
		return err
	}
	if n.anyOf, err = subList("anyOf"); err != nil {
		return err
	}
	if n.oneOf, err = subList("oneOf"); err != nil {
		return err
	}
	if n.not, err = sub("not"); err != nil {
		return err
	}
	if c.draft >= draft7 {
		if n.ifN, err = sub("if"); err != nil {
			return err
		}
		if n.thenN, err = sub("then"); err != nil {
			return err
		}
		if n.elseN, err = sub("else"); err != nil {
			return err
		}
	}
	return nil
}

// boolOrSchema compiles a keyword whose value is a schema, or in draft-04 also a
// boolean (additionalProperties, additionalItems).
func (c *compiler) boolOrSchema(obj map[string]any, at, name string) (*node, error) {
	v, ok := obj[name]
	if !ok {
		return nil, nil
	}
	if b, ok := v.(bool); ok {
		return &node{loc: at + "/" + name, always: &b}, nil
	}
	return c.compileAt(at + "/" + escapeToken(name))
}

func (c *compiler) compileDependencies(n *node, obj map[string]any, loc func(string) string) error {
	add := func(name string, allowSchemas, allowLists bool) error {
		v, ok := obj[name]
		if !ok {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return &schemaError{loc(name), "must be an object"}
		}
		for _, k := range sortedKeys(m) {
			if list, ok := stringList(m[k]); ok && allowLists {
				if n.dependentRequired == nil {
					n.dependentRequired = map[string][]string{}
				}
				n.dependentRequired[k] = append(n.dependentRequired[k], list...)
				continue
			}
			if _, isArr := m[k].([]any); isArr || !allowSchemas {
				return &schemaError{loc(name) + "/" + escapeToken(k), "must be an array of strings"}
			}
			s, err := c.compileAt(loc(name) + "/" + escapeToken(k))
			if err != nil {
				return err
			}
			if n.dependentSchemas == nil {
				n.dependentSchemas = map[string]*node{}
			}
			if prev := n.dependentSchemas[k]; prev != nil {
				s = &node{loc: s.loc, minLength: -1, maxLength: -1, minProps: -1, maxProps: -1,
					minItems: -1, maxItems: -1, minContains: -1, maxContains: -1, allOf: []*node{prev, s}}
			}
			n.dependentSchemas[k] = s
		}
		return nil
	}
	// "dependencies" was split in 2019-09; later schemas still use the old keyword,
	// and honouring it is what their authors mean.
	if err := add("dependencies", true, true); err != nil {
		return err
	}
	if c.draft >= draft2019 {
		if err := add("dependentRequired", false, true); err != nil {
			return err
		}
		if err := add("dependentSchemas", true, false); err != nil {
			return err
		}
	}
	return nil
}

func (c *compiler) compileItems(n *node, obj map[string]any, loc func(string) string, subList func(string) ([]*node, error)) error {
	var err error
	if c.draft >= draft2020 {
		if n.prefixItems, err = subList("prefixItems"); err != nil {
			return err
		}
		if v, ok := obj["items"]; ok {
			if _, isArr := v.([]any); isArr {
				return &schemaError{loc("items"), "must be a schema in 2020-12; use prefixItems for a tuple"}
			}
			if n.items, err = c.compileAt(loc("items")); err != nil {
				return err
			}
		}
		return nil
	}
	v, ok := obj["items"]
	if !ok {
		return nil
	}
	if _, isArr := v.([]any); !isArr {
		n.items, err = c.compileAt(loc("items"))
		return err
	}
	arr := v.([]any)
	n.prefixItems = make([]*node, len(arr))
	for i := range arr {
		if n.prefixItems[i], err = c.compileAt(loc("items") + "/" + strconv.Itoa(i)); err != nil {
			return err
		}
	}
	n.items, err = c.boolOrSchema(obj, n.loc, "additionalItems")
	n.tupleRest = true
	return err
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
