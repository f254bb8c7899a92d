package secrettemplate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"text/template"
)

// functions are the functions a template may call besides text/template's own (and, or,
// not, eq, ne, lt, le, gt, ge, len, index, slice, print, printf, println, urlquery, js,
// html). Each works on its arguments alone. In check mode (lenient) a function given a
// value it cannot use returns "" instead of failing: the value is a placeholder.
//
//	b64enc S        S in standard base64
//	b64dec S        S decoded from standard base64
//	toJson V        V as JSON
//	default D V     V, or D when V is missing, empty, zero or false
//	join SEP LIST   LIST's elements (strings as they are, other values as JSON) joined by SEP
//	quote S         S as a double-quoted string with Go escapes
//	pathescape S    S escaped for a URL path segment
//	userinfo U P    U and P as the user information of a URL (user:password, escaped)
//	lower S, upper S, trim S
func functions(lenient bool) template.FuncMap {
	fail := func(err error) (string, error) {
		if lenient {
			return "", nil
		}
		return "", err
	}
	return template.FuncMap{
		"b64enc": func(v any) string { return base64.StdEncoding.EncodeToString([]byte(text(v))) },
		"b64dec": func(v any) (string, error) {
			b, err := base64.StdEncoding.DecodeString(text(v))
			if err != nil {
				return fail(errors.New("b64dec: the value is not standard base64"))
			}
			return string(b), nil
		},
		"toJson": func(v any) (string, error) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				return fail(errors.New("toJson: the value cannot be encoded as JSON"))
			}
			return strings.TrimSuffix(buf.String(), "\n"), nil
		},
		"default": func(d, v any) any {
			if empty(v) {
				return d
			}
			return v
		},
		"join": func(sep any, list any) (string, error) {
			rv := reflect.ValueOf(list)
			if !rv.IsValid() || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
				return fail(fmt.Errorf("join: the value is a %s, not a list", kindOf(list)))
			}
			parts := make([]string, rv.Len())
			for i := range parts {
				parts[i] = text(rv.Index(i).Interface())
			}
			return strings.Join(parts, text(sep)), nil
		},
		"quote":      func(v any) string { return strconv.Quote(text(v)) },
		"pathescape": func(v any) string { return url.PathEscape(text(v)) },
		"userinfo":   func(u, p any) string { return url.UserPassword(text(u), text(p)).String() },
		"lower":      func(v any) string { return strings.ToLower(text(v)) },
		"upper":      func(v any) string { return strings.ToUpper(text(v)) },
		"trim":       func(v any) string { return strings.TrimSpace(text(v)) },
	}
}

// text is v as a Secret holds it: a string as it is, nothing for nil, any other value as
// JSON (so that a port 5432 is "5432").
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// empty reports a value default replaces: nil, "", 0, false, an empty list or object.
func empty(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.Array, reflect.String:
		return rv.Len() == 0
	}
	return rv.IsZero()
}

// kindOf names the JSON type of v, for errors that must not show v.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, int, int64, json.Number:
		return "number"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
