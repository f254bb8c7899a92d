package jsonschema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// schemaObject reads the keywords of one schema object into its compiled node.
// The keyword groups are read in a fixed order, so the first problem reported for
// a schema with several is always the same one.
type schemaObject struct {
	c   *compiler
	n   *node
	obj map[string]any
}

func (c *compiler) compileObject(n *node, obj map[string]any) error {
	s := &schemaObject{c: c, n: n, obj: obj}
	if replaced, err := s.compileRef(); replaced || err != nil {
		return err
	}
	for _, group := range []func() error{
		s.compileGeneric, s.compileNumeric, s.compileString,
		s.compileProperties, s.compileArray, s.compileCombinators,
	} {
		if err := group(); err != nil {
			return err
		}
	}
	return nil
}

func (s *schemaObject) kw(name string) (any, bool) {
	v, ok := s.obj[name]
	return v, ok
}

func (s *schemaObject) loc(name string) string { return s.n.loc + "/" + escapeToken(name) }

func (s *schemaObject) bad(name, want string) error {
	return &schemaError{s.loc(name), "must be " + want}
}

func (s *schemaObject) sub(name string) (*node, error) {
	if _, ok := s.obj[name]; !ok {
		return nil, nil
	}
	return s.c.compileAt(s.loc(name))
}

func (s *schemaObject) subList(name string) ([]*node, error) {
	v, ok := s.obj[name]
	if !ok {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, s.bad(name, "a non-empty array of schemas")
	}
	out := make([]*node, len(arr))
	for i := range arr {
		sn, err := s.c.compileAt(s.loc(name) + "/" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		out[i] = sn
	}
	return out, nil
}

func (s *schemaObject) subMap(name string) (map[string]*node, error) {
	v, ok := s.obj[name]
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, s.bad(name, "an object of schemas")
	}
	out := make(map[string]*node, len(m))
	for k := range m {
		sn, err := s.c.compileAt(s.loc(name) + "/" + escapeToken(k))
		if err != nil {
			return nil, err
		}
		out[k] = sn
	}
	return out, nil
}

func (s *schemaObject) num(name string) (*number, error) {
	v, ok := s.obj[name]
	if !ok {
		return nil, nil
	}
	jn, ok := v.(json.Number)
	if !ok {
		return nil, s.bad(name, "a number")
	}
	r, ok := parseNumber(jn)
	if !ok {
		return nil, s.bad(name, "a number of reasonable size")
	}
	return &number{r, string(jn)}, nil
}

func (s *schemaObject) count(name string) (int, error) {
	v, ok := s.obj[name]
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
	return 0, s.bad(name, "a non-negative integer")
}

// keyword is a keyword and where its value goes.
type keyword[T any] struct {
	name string
	into *T
}

type (
	numberKeyword = keyword[*number]
	countKeyword  = keyword[int]
	subKeyword    = keyword[*node]
)

// readKeywords reads keywords in the order given, each with read.
func readKeywords[T any](read func(name string) (T, error), kws ...keyword[T]) error {
	var err error
	for _, k := range kws {
		if *k.into, err = read(k.name); err != nil {
			return err
		}
	}
	return nil
}

func (s *schemaObject) numbers(kws ...numberKeyword) error { return readKeywords(s.num, kws...) }

func (s *schemaObject) counts(kws ...countKeyword) error { return readKeywords(s.count, kws...) }

func (s *schemaObject) subs(kws ...subKeyword) error { return readKeywords(s.sub, kws...) }

// compileRef reads "$ref"; replaced reports that the reference stands for the
// whole schema object, as it does before 2019-09.
func (s *schemaObject) compileRef() (replaced bool, err error) {
	r, ok := s.kw("$ref")
	if !ok {
		return false, nil
	}
	str, ok := r.(string)
	if !ok {
		return false, s.bad("$ref", "a string")
	}
	ptr, err := s.c.refPointer(str, s.loc("$ref"))
	if err != nil {
		return false, err
	}
	if s.n.ref, err = s.c.compileAt(ptr); err != nil {
		return false, err
	}
	return s.c.draft <= draft7, nil
}

// compileGeneric reads the keywords for any instance type: type, enum, const.
func (s *schemaObject) compileGeneric() error {
	n := s.n
	if t, ok := s.kw("type"); ok {
		var err error
		if n.types, err = parseTypes(t); err != nil {
			return &schemaError{s.loc("type"), err.Error()}
		}
	}
	if e, ok := s.kw("enum"); ok {
		arr, ok := e.([]any)
		if !ok {
			return s.bad("enum", "an array")
		}
		n.enum, n.hasEn = arr, true
	}
	if s.c.draft >= draft6 {
		n.konst, n.hasCon = s.kw("const")
	}
	return nil
}

func (s *schemaObject) compileNumeric() error {
	n := s.n
	if err := s.numbers(numberKeyword{"minimum", &n.minimum}, numberKeyword{"maximum", &n.maximum}); err != nil {
		return err
	}
	if s.c.draft == draft4 {
		if err := s.compileDraft4Exclusive(); err != nil {
			return err
		}
	} else if err := s.numbers(numberKeyword{"exclusiveMinimum", &n.exclusiveMin},
		numberKeyword{"exclusiveMaximum", &n.exclusiveMx}); err != nil {
		return err
	}
	if err := s.numbers(numberKeyword{"multipleOf", &n.multipleOf}); err != nil {
		return err
	}
	if n.multipleOf != nil && n.multipleOf.rat.Sign() <= 0 {
		return s.bad("multipleOf", "greater than 0")
	}
	return nil
}

// compileDraft4Exclusive reads the draft-04 exclusive keywords: booleans that
// make minimum and maximum exclusive.
func (s *schemaObject) compileDraft4Exclusive() error {
	n := s.n
	for _, k := range []struct {
		name      string
		bound     **number
		exclusive **number
	}{{"exclusiveMinimum", &n.minimum, &n.exclusiveMin}, {"exclusiveMaximum", &n.maximum, &n.exclusiveMx}} {
		v, ok := s.kw(k.name)
		if !ok {
			continue
		}
		b, ok := v.(bool)
		if !ok {
			return s.bad(k.name, "a boolean in draft-04")
		}
		if b && *k.bound != nil {
			*k.exclusive, *k.bound = *k.bound, nil
		}
	}
	return nil
}

func (s *schemaObject) compileString() error {
	n := s.n
	if err := s.counts(countKeyword{"minLength", &n.minLength}, countKeyword{"maxLength", &n.maxLength}); err != nil {
		return err
	}
	if p, ok := s.kw("pattern"); ok {
		str, ok := p.(string)
		if !ok {
			return s.bad("pattern", "a string")
		}
		var err error
		if n.pattern, err = regexp.Compile(str); err != nil {
			return &schemaError{s.loc("pattern"), fmt.Sprintf("invalid regular expression %q: %v", str, err)}
		}
	}
	if f, ok := s.kw("format"); ok {
		str, ok := f.(string)
		if !ok {
			return s.bad("format", "a string")
		}
		// From 2019-09 on, format is an annotation unless a vocabulary says
		// otherwise, and plan schemas declare none.
		if s.c.draft <= draft7 {
			n.format = str
		}
	}
	return nil
}

func (s *schemaObject) compileProperties() error {
	n := s.n
	var err error
	if r, ok := s.kw("required"); ok {
		if n.required, ok = stringList(r); !ok {
			return s.bad("required", "an array of strings")
		}
	}
	if n.properties, err = s.subMap("properties"); err != nil {
		return err
	}
	if err := s.compilePatternProperties(); err != nil {
		return err
	}
	if n.additionalProps, err = s.c.boolOrSchema(s.obj, n.loc, "additionalProperties"); err != nil {
		return err
	}
	if err := s.counts(countKeyword{"minProperties", &n.minProps}, countKeyword{"maxProperties", &n.maxProps}); err != nil {
		return err
	}
	if err := s.compileDependencies(); err != nil {
		return err
	}
	if s.c.draft >= draft6 {
		return s.subs(subKeyword{"propertyNames", &n.propertyNames})
	}
	return nil
}

func (s *schemaObject) compilePatternProperties() error {
	v, ok := s.kw("patternProperties")
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return s.bad("patternProperties", "an object of schemas")
	}
	for _, k := range sortedKeys(m) {
		re, err := regexp.Compile(k)
		if err != nil {
			return &schemaError{s.loc("patternProperties"), fmt.Sprintf("invalid regular expression %q: %v", k, err)}
		}
		sn, err := s.c.compileAt(s.loc("patternProperties") + "/" + escapeToken(k))
		if err != nil {
			return err
		}
		s.n.patternProperties = append(s.n.patternProperties, patternNode{re, sn})
	}
	return nil
}

func (s *schemaObject) compileArray() error {
	n := s.n
	if err := s.compileItems(); err != nil {
		return err
	}
	if s.c.draft >= draft6 {
		if err := s.subs(subKeyword{"contains", &n.contains}); err != nil {
			return err
		}
	}
	if s.c.draft >= draft2019 {
		if err := s.counts(countKeyword{"minContains", &n.minContains}, countKeyword{"maxContains", &n.maxContains}); err != nil {
			return err
		}
	}
	if err := s.counts(countKeyword{"minItems", &n.minItems}, countKeyword{"maxItems", &n.maxItems}); err != nil {
		return err
	}
	if u, ok := s.kw("uniqueItems"); ok {
		if n.uniqueItems, ok = u.(bool); !ok {
			return s.bad("uniqueItems", "a boolean")
		}
	}
	return nil
}

func (s *schemaObject) compileCombinators() error {
	n := s.n
	if err := readKeywords(s.subList, keyword[[]*node]{"allOf", &n.allOf}, keyword[[]*node]{"anyOf", &n.anyOf},
		keyword[[]*node]{"oneOf", &n.oneOf}); err != nil {
		return err
	}
	if err := s.subs(subKeyword{"not", &n.not}); err != nil {
		return err
	}
	if s.c.draft >= draft7 {
		return s.subs(subKeyword{"if", &n.ifN}, subKeyword{"then", &n.thenN}, subKeyword{"else", &n.elseN})
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

func (s *schemaObject) compileDependencies() error {
	c, n, obj, loc := s.c, s.n, s.obj, s.loc
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

func (s *schemaObject) compileItems() error {
	c, n, obj, loc := s.c, s.n, s.obj, s.loc
	var err error
	if c.draft >= draft2020 {
		if n.prefixItems, err = s.subList("prefixItems"); err != nil {
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
