package jsonschema

// The JSON values an instance is made of: their types, exact numbers, equality, and
// how messages print them.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

func hasType(v any, types []string) bool {
	t := jsonType(v)
	for _, want := range types {
		if want == t || (want == "integer" && t == "number" && isInteger(v)) {
			return true
		}
	}
	return false
}

// jsonType names the JSON type of a decoded value. Every number is "number";
// whether it is also an integer is a separate question.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// isInteger reports whether a number has no fractional part: 1.0 and 1e3 are
// integers.
func isInteger(v any) bool {
	r, _, ok := ratOf(v)
	return ok && r.IsInt()
}

// maxExponent bounds the decimal exponent of a number this package will turn into
// an exact fraction: 1e1000000000 would otherwise need a gigabyte of digits.
const maxExponent = 10000

// parseNumber turns a JSON number into an exact fraction.
func parseNumber(n json.Number) (*big.Rat, bool) {
	s := string(n)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(s[i+1:])
		if err != nil || exp > maxExponent || exp < -maxExponent {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}

// ratOf returns a number as an exact fraction together with its text for messages.
func ratOf(v any) (*big.Rat, string, bool) {
	switch x := v.(type) {
	case json.Number:
		r, ok := parseNumber(x)
		return r, string(x), ok
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, "", false
		}
		return new(big.Rat).SetFloat64(x), strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return nil, "", false
}

// formatNumber prints a number in plain decimal notation, so that 20.0, 2e1 and 20
// all read 20, unless that would take more than maxPrinted characters: then it
// prints the number as written.
func formatNumber(r *big.Rat, lit string) string {
	const maxPrinted = 40
	if r.IsInt() {
		if s := r.Num().String(); len(s) <= maxPrinted {
			return s
		}
		return lit
	}
	// A JSON number is a terminating decimal: scaling by ten often enough
	// makes it an integer, and that count is the number of decimals it needs.
	x := new(big.Rat).Set(r)
	ten := big.NewRat(10, 1)
	for places := 1; places <= maxPrinted; places++ {
		x.Mul(x, ten)
		if x.IsInt() {
			return r.FloatString(places)
		}
	}
	return lit
}

func (n *number) text() string { return formatNumber(n.rat, n.lit) }

// equal is JSON equality: numbers by value, objects regardless of key order.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number, float64:
		if jsonType(b) != "number" {
			return false
		}
		if xs, ok := a.(json.Number); ok {
			if ys, ok := b.(json.Number); ok && xs == ys {
				return true
			}
		}
		rx, _, ok1 := ratOf(a)
		ry, _, ok2 := ratOf(b)
		return ok1 && ok2 && rx.Cmp(ry) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		if equal(v, e) {
			return true
		}
	}
	return false
}

// enumMessage lists the allowed values when they are all scalars; a list of
// objects would be unreadable, and could be long.
func enumMessage(enum []any) string {
	want := make([]string, 0, len(enum))
	for _, e := range enum {
		s, ok := scalar(e)
		if !ok {
			return "value must be one of the values the schema lists"
		}
		want = append(want, s)
	}
	if len(want) == 1 {
		return "value must be " + want[0]
	}
	return "value must be one of " + strings.Join(want, ", ")
}

func constMessage(c any) string {
	if s, ok := scalar(c); ok {
		return "value must be " + s
	}
	return "value must be the constant the schema gives"
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case string:
		return quote(x), true
	case json.Number:
		return string(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

// quote puts s in single quotes, escaping what needs it the way Go does.
func quote(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return "'" + strings.ReplaceAll(q, "'", `\'`) + "'"
}

func joinQuoted(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}
