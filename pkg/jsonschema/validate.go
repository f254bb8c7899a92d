package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// validation holds the state of one Validate call.
type validation struct {
	problems []Problem
	err      error

	// supply offers properties of the root object that the instance lacks (see
	// Schema.ValidateSupplied); nil for a plain validation. supplied are those it
	// offered that a required-ness check counted as present.
	supply   func(string) bool
	supplied map[string]bool
}

func (vs *validation) add(path []string, format string, args ...any) {
	vs.problems = append(vs.problems, Problem{
		Path:    append([]string(nil), path...),
		Message: fmt.Sprintf(format, args...),
	})
}

// addMissing adds the problem of an object at path that lacks the properties missing.
func (vs *validation) addMissing(path, missing []string, format string, args ...any) {
	vs.add(path, format, args...)
	vs.problems[len(vs.problems)-1].Missing = missing
}

// passes reports whether v is valid against n, without keeping its problems. It judges
// v as it is: nothing is supplied.
func (vs *validation) passes(n *node, v any, path []string, inPlace []*node) bool {
	ok, _ := vs.trial(n, v, path, inPlace, false)
	return ok
}

// trial validates v against n apart from vs, with vs's supply when withSupply, and
// reports whether v passes and which properties were supplied for it to pass: they are
// vs's only if the caller takes them (take).
func (vs *validation) trial(n *node, v any, path []string, inPlace []*node, withSupply bool) (bool, map[string]bool) {
	sub := &validation{}
	if withSupply {
		sub.supply = vs.supply
	}
	sub.validate(n, v, path, inPlace)
	if sub.err != nil && vs.err == nil {
		vs.err = sub.err
	}
	return len(sub.problems) == 0, sub.supplied
}

// take counts the properties supplied for a subschema the outcome rests on as supplied.
func (vs *validation) take(supplied map[string]bool) {
	for k := range supplied {
		if vs.supplied == nil {
			vs.supplied = map[string]bool{}
		}
		vs.supplied[k] = true
	}
}

// lacking lists the names of want that obj, found at path, lacks: at the root, without
// those the supply offers, which count as supplied.
func (vs *validation) lacking(obj map[string]any, want []string, path []string) []string {
	missing := missingOf(obj, want)
	if vs.supply == nil || len(path) > 0 || len(missing) == 0 {
		return missing
	}
	var out []string
	for _, k := range missing {
		if vs.supply(k) {
			vs.take(map[string]bool{k: true})
			continue
		}
		out = append(out, k)
	}
	return out
}

// alternatives checks v against the subschemas of an anyOf (one: false) or a oneOf
// (one: true): how many v passes as it is and, when it passes none, the properties to
// supply for it to pass the first alternative that can (anyOf) or the only one
// (oneOf); nil when there is no such alternative.
func (vs *validation) alternatives(list []*node, v any, path []string, inPlace []*node, one bool) (int, map[string]bool) {
	matched := 0
	for _, s := range list {
		if vs.passes(s, v, path, inPlace) {
			matched++
			if !one {
				return matched, nil
			}
		}
	}
	if matched > 0 || vs.supply == nil {
		return matched, nil
	}
	var found map[string]bool
	for _, s := range list {
		ok, supplied := vs.trial(s, v, path, inPlace, true)
		switch {
		case !ok:
		case found != nil:
			return 0, nil // a oneOf whose alternatives two supplies would satisfy: neither
		case !one:
			return 0, supplied
		default:
			found = supplied
		}
	}
	return 0, found
}

// validate checks v, found at path, against n. inPlace lists the references
// followed since the validation last moved into a child of the instance: meeting one
// of them again means the schema would loop forever.
func (vs *validation) validate(n *node, v any, path []string, inPlace []*node) {
	if vs.err != nil {
		return
	}
	if n.always != nil {
		if !*n.always {
			vs.add(path, "not allowed")
		}
		return
	}
	if n.ref != nil {
		for _, seen := range inPlace {
			if seen == n {
				vs.err = fmt.Errorf("schema at #%s refers to itself without consuming the instance", n.loc)
				return
			}
		}
		// Before 2019-09 the compiler keeps nothing beside a reference, so
		// going on checks only what later drafts apply next to it.
		vs.validate(n.ref, v, path, append(inPlace, n))
	}

	// A wrong type, constant or enumeration value makes every other message
	// noise, so they stand alone.
	if len(n.types) > 0 && !hasType(v, n.types) {
		vs.add(path, "got %s, want %s", jsonType(v), strings.Join(n.types, " or "))
		return
	}
	if n.hasCon && !equal(v, n.konst) {
		vs.add(path, "%s", constMessage(n.konst))
		return
	}
	if n.hasEn && !inEnum(v, n.enum) {
		vs.add(path, "%s", enumMessage(n.enum))
		return
	}

	switch x := v.(type) {
	case json.Number, float64:
		vs.validateNumber(n, x, path)
	case string:
		vs.validateString(n, x, path)
	case map[string]any:
		vs.validateObject(n, x, path, inPlace)
	case []any:
		vs.validateArray(n, x, path, inPlace)
	}

	for _, s := range n.allOf {
		vs.validate(s, v, path, inPlace)
	}
	for _, alt := range []struct {
		keyword string
		list    []*node
		one     bool
	}{{"anyOf", n.anyOf, false}, {"oneOf", n.oneOf, true}} {
		if len(alt.list) == 0 {
			continue
		}
		matched, supplied := vs.alternatives(alt.list, v, path, inPlace, alt.one)
		switch {
		case supplied != nil:
			vs.take(supplied)
		case matched == 0:
			vs.add(path, "%s failed: the value matches none of the alternatives", alt.keyword)
		case alt.one && matched > 1:
			vs.add(path, "oneOf: matched %d subschemas, want exactly 1", matched)
		}
	}
	if n.not != nil && vs.passes(n.not, v, path, inPlace) {
		vs.add(path, "not failed: the value must not match the schema")
	}
	if n.ifN != nil {
		if vs.passes(n.ifN, v, path, inPlace) {
			if n.thenN != nil {
				vs.validate(n.thenN, v, path, inPlace)
			}
		} else if n.elseN != nil {
			vs.validate(n.elseN, v, path, inPlace)
		}
	}
}

func (vs *validation) validateNumber(n *node, v any, path []string) {
	if n.minimum == nil && n.maximum == nil && n.exclusiveMin == nil && n.exclusiveMx == nil && n.multipleOf == nil {
		return
	}
	r, lit, ok := ratOf(v)
	if !ok {
		vs.add(path, "number out of range")
		return
	}
	lit = formatNumber(r, lit)
	if b := n.minimum; b != nil && r.Cmp(b.rat) < 0 {
		vs.add(path, "minimum: got %s, want %s", lit, b.text())
	}
	if b := n.maximum; b != nil && r.Cmp(b.rat) > 0 {
		vs.add(path, "maximum: got %s, want %s", lit, b.text())
	}
	if b := n.exclusiveMin; b != nil && r.Cmp(b.rat) <= 0 {
		vs.add(path, "exclusiveMinimum: got %s, want %s", lit, b.text())
	}
	if b := n.exclusiveMx; b != nil && r.Cmp(b.rat) >= 0 {
		vs.add(path, "exclusiveMaximum: got %s, want %s", lit, b.text())
	}
	if m := n.multipleOf; m != nil && !new(big.Rat).Quo(r, m.rat).IsInt() {
		vs.add(path, "multipleOf: got %s, want %s", lit, m.text())
	}
}

func (vs *validation) validateString(n *node, s string, path []string) {
	if n.minLength >= 0 || n.maxLength >= 0 {
		length := utf8.RuneCountInString(s)
		if n.minLength >= 0 && length < n.minLength {
			vs.add(path, "minLength: got %d, want %d", length, n.minLength)
		}
		if n.maxLength >= 0 && length > n.maxLength {
			vs.add(path, "maxLength: got %d, want %d", length, n.maxLength)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		vs.add(path, "%s does not match pattern %s", quote(s), quote(n.pattern.String()))
	}
	if n.format != "" {
		if err := checkFormat(n.format, s); err != nil {
			vs.add(path, "%s is not valid %s: %v", quote(s), n.format, err)
		}
	}
}

func (vs *validation) validateObject(n *node, obj map[string]any, path []string, inPlace []*node) {
	if n.minProps >= 0 && len(obj) < n.minProps {
		vs.add(path, "minProperties: got %d, want %d", len(obj), n.minProps)
	}
	if n.maxProps >= 0 && len(obj) > n.maxProps {
		vs.add(path, "maxProperties: got %d, want %d", len(obj), n.maxProps)
	}
	if missing := vs.lacking(obj, n.required, path); len(missing) == 1 {
		vs.addMissing(path, missing, "missing property %s", quote(missing[0]))
	} else if len(missing) > 1 {
		vs.addMissing(path, missing, "missing properties %s", joinQuoted(missing))
	}
	keys := sortedKeys(obj)
	for _, k := range keys {
		if list, ok := n.dependentRequired[k]; ok {
			if missing := vs.lacking(obj, list, path); len(missing) > 0 {
				vs.addMissing(path, missing, "properties %s required, if %s exists", joinQuoted(missing), quote(k))
			}
		}
		if s, ok := n.dependentSchemas[k]; ok {
			vs.validate(s, obj, path, inPlace)
		}
	}

	var extra []string
	for _, k := range keys {
		child := append(path[:len(path):len(path)], k)
		matched := false
		if s, ok := n.properties[k]; ok {
			matched = true
			vs.validate(s, obj[k], child, nil)
		}
		for _, p := range n.patternProperties {
			if p.re.MatchString(k) {
				matched = true
				vs.validate(p.n, obj[k], child, nil)
			}
		}
		if matched || n.additionalProps == nil {
			continue
		}
		if a := n.additionalProps; a.always != nil {
			if !*a.always {
				extra = append(extra, k)
			}
			continue
		}
		vs.validate(n.additionalProps, obj[k], child, nil)
	}
	if len(extra) > 0 {
		vs.add(path, "additional properties %s not allowed", joinQuoted(extra))
	}

	if n.propertyNames != nil {
		for _, k := range keys {
			if !vs.passes(n.propertyNames, k, path, nil) {
				vs.add(path, "invalid propertyName %s", quote(k))
			}
		}
	}
}

func (vs *validation) validateArray(n *node, arr []any, path []string, inPlace []*node) {
	if n.minItems >= 0 && len(arr) < n.minItems {
		vs.add(path, "minItems: got %d, want %d", len(arr), n.minItems)
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		vs.add(path, "maxItems: got %d, want %d", len(arr), n.maxItems)
	}
	if n.uniqueItems {
		if i, j, dup := duplicate(arr); dup {
			vs.add(path, "items at %d and %d are equal", i, j)
		}
	}

	child := func(i int) []string { return append(path[:len(path):len(path)], strconv.Itoa(i)) }
	for i, s := range n.prefixItems {
		if i >= len(arr) {
			break
		}
		vs.validate(s, arr[i], child(i), nil)
	}
	if rest := n.items; rest != nil && len(arr) > len(n.prefixItems) {
		if rest.always != nil {
			if !*rest.always {
				extra := len(arr) - len(n.prefixItems)
				if n.tupleRest {
					vs.add(path, "last %d additionalItem(s) not allowed", extra)
				} else {
					vs.add(path, "got %d items, want at most %d", len(arr), len(n.prefixItems))
				}
			}
		} else {
			for i := len(n.prefixItems); i < len(arr); i++ {
				vs.validate(rest, arr[i], child(i), nil)
			}
		}
	}

	if n.contains != nil {
		matched := 0
		for i, x := range arr {
			if vs.passes(n.contains, x, child(i), nil) {
				matched++
			}
		}
		lo := 1
		if n.minContains >= 0 {
			lo = n.minContains
		}
		switch {
		case matched < lo && lo == 1:
			vs.add(path, "no items match contains schema")
		case matched < lo:
			vs.add(path, "min %d items required to match contains schema, but matched %d", lo, matched)
		case n.maxContains >= 0 && matched > n.maxContains:
			vs.add(path, "max %d items required to match contains schema, but matched %d", n.maxContains, matched)
		}
	}
}

// missingOf lists the names in want that obj lacks, in the order of want.
func missingOf(obj map[string]any, want []string) []string {
	var missing []string
	for _, k := range want {
		if _, ok := obj[k]; !ok && !contains(missing, k) {
			missing = append(missing, k)
		}
	}
	return missing
}

// duplicate finds the first pair of equal items.
func duplicate(arr []any) (int, int, bool) {
	for j := 1; j < len(arr); j++ {
		for i := 0; i < j; i++ {
			if equal(arr[i], arr[j]) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}
