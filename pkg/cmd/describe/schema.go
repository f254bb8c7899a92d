package describe

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// SchemaParameter is one parameter of a plan's JSON schema, as a row of the describe view.
type SchemaParameter struct {
	Name, Type, Default, Allowed, Description string
	Required                                  bool
}

// SchemaParameters flattens the properties of a JSON schema (an object schema) into rows,
// nested objects as "parent.child". Keywords it does not show are left for
// --show-schemas.
func SchemaParameters(raw []byte) ([]SchemaParameter, error) {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("the schema is not a JSON object: %w", err)
	}
	var out []SchemaParameter
	walkSchema("", root, true, &out, 0)
	return out, nil
}

func walkSchema(prefix string, schema map[string]any, parentRequired bool, out *[]SchemaParameter, depth int) {
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		if p == nil {
			continue
		}
		row := SchemaParameter{
			Name:        prefix + n,
			Type:        typeOf(p),
			Required:    required[n] && parentRequired,
			Description: firstString(p, "description", "title"),
		}
		if d, ok := p["default"]; ok {
			row.Default = compact(d)
		}
		row.Allowed = allowed(p)
		*out = append(*out, row)
		if _, nested := p["properties"]; nested && depth < 3 {
			walkSchema(prefix+n+".", p, row.Required, out, depth+1)
		}
	}
}

func typeOf(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		if t == "array" {
			if items, ok := p["items"].(map[string]any); ok {
				if it := typeOf(items); it != "" {
					return "array of " + it
				}
			}
		}
		return t
	case []any:
		var parts []string
		for _, x := range t {
			parts = append(parts, fmt.Sprint(x))
		}
		return strings.Join(parts, "|")
	}
	if _, ok := p["properties"]; ok {
		return "object"
	}
	if _, ok := p["enum"]; ok {
		return "enum"
	}
	return ""
}

func allowed(p map[string]any) string {
	if e, ok := p["enum"].([]any); ok {
		parts := make([]string, len(e))
		for i, v := range e {
			parts[i] = compact(v)
		}
		return strings.Join(parts, ", ")
	}
	if c, ok := p["const"]; ok {
		return compact(c)
	}
	var parts []string
	for _, k := range []struct{ key, label string }{
		{"minimum", ">="}, {"exclusiveMinimum", ">"}, {"maximum", "<="}, {"exclusiveMaximum", "<"},
		{"minLength", "length >="}, {"maxLength", "length <="}, {"pattern", "matches"}, {"format", "format"},
	} {
		if v, ok := p[k.key]; ok {
			if b, isBool := v.(bool); isBool {
				// draft-04 boolean exclusiveMinimum/Maximum modify minimum/maximum.
				_ = b
				continue
			}
			parts = append(parts, k.label+" "+compact(v))
		}
	}
	return strings.Join(parts, ", ")
}

func compact(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func firstString(p map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := p[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// SchemaTable prints the parameters of a schema as a table.
func SchemaTable(w io.Writer, indent string, raw []byte) error {
	params, err := SchemaParameters(raw)
	if err != nil {
		return err
	}
	if len(params) == 0 {
		fmt.Fprintf(w, "%s<no parameters>\n", indent)
		return nil
	}
	var buf strings.Builder
	t := printers.NewTable(&buf, "NAME", "TYPE", "DEFAULT", "ALLOWED", "REQUIRED", "DESCRIPTION")
	for _, p := range params {
		t.Append(p.Name, p.Type, printers.Truncate(p.Default, 30), printers.Truncate(p.Allowed, 40), printers.YesNo(p.Required), printers.Truncate(p.Description, 60))
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight(indent+line, " "))
	}
	return nil
}
