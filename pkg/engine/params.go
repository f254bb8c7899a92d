package engine

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/jsonschema"
)

// Parameters are an instance's parameters as sent to the broker: the inline ones merged
// with those read from Secrets. Values are kept as raw JSON so numbers and key order
// reach the broker as the user wrote them.
type Parameters struct {
	// All holds every top-level parameter.
	All map[string]json.RawMessage
	// FromSecret names the top-level keys whose values came from a Secret.
	FromSecret map[string]bool
	// Salt keys Checksum: the record's status.parametersSalt.
	Salt string
}

// MaxParametersBytes caps the parameters of one call, inline and from Secrets together,
// in bytes of JSON: parametersFrom may name any number of Secrets of up to 1 MiB each,
// and what a record's author writes must not make reconcile hold more.
const MaxParametersBytes = 512 << 10

// SecretReader reads a Secret's data; the store's GetSecret fits.
type SecretReader func(ctx context.Context, namespace, name string) (map[string][]byte, error)

// ResolveParameters merges inline parameters with those of parametersFrom, reading the
// Secrets now: they are read again for every new call and never copied into a record (a
// re-send of an interrupted call sends what was kept of the first send instead, see
// sentrequest.go). A top-level key given twice is an error, so the user's intent is never
// ambiguous.
func ResolveParameters(ctx context.Context, namespace string, inline *runtime.RawExtension, from []v1alpha1.ParametersFromSource, read SecretReader) (Parameters, error) {
	p := Parameters{All: map[string]json.RawMessage{}, FromSecret: map[string]bool{}}
	if inline != nil && len(bytes.TrimSpace(inline.Raw)) > 0 && string(bytes.TrimSpace(inline.Raw)) != "null" {
		if err := json.Unmarshal(inline.Raw, &p.All); err != nil {
			return p, fmt.Errorf("inline parameters are not a JSON object: %w", err)
		}
	}
	size := 0
	for k, v := range p.All {
		size += len(k) + len(v)
	}
	overLimit := func() error {
		return fmt.Errorf("the parameters are more than %d bytes of JSON, inline and from Secrets together: send fewer or smaller parameters", MaxParametersBytes)
	}
	if size > MaxParametersBytes {
		return p, overLimit()
	}
	for _, src := range from {
		ref := src.SecretKeyRef
		if ref == nil {
			continue
		}
		data, err := read(ctx, namespace, ref.Name)
		if err != nil {
			return p, err
		}
		add := func(k string, v json.RawMessage) error {
			if _, dup := p.All[k]; dup {
				return fmt.Errorf("parameter %q is given more than once (Secret %q and elsewhere): remove one of them", k, ref.Name)
			}
			p.All[k], p.FromSecret[k] = v, true
			if size += len(k) + len(v); size > MaxParametersBytes {
				return overLimit()
			}
			return nil
		}
		if ref.Key != "" {
			raw, ok := data[ref.Key]
			if !ok {
				return p, fmt.Errorf("Secret %q in namespace %q has no key %q with parameters", ref.Name, namespace, ref.Key)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
				return p, fmt.Errorf("key %q of Secret %q must hold a JSON object of parameters", ref.Key, ref.Name)
			}
			for _, k := range sortedKeys(obj) {
				if err := add(k, obj[k]); err != nil {
					return p, err
				}
			}
			continue
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := json.Marshal(string(data[k]))
			if err := add(k, v); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// JSON is the parameters object to send; nil when there are none.
func (p Parameters) JSON() json.RawMessage { return p.subset(nil) }

// body is the parameters object of a request that carries parameters: "{}" when there
// are none.
func (p Parameters) body() json.RawMessage {
	if b := p.JSON(); b != nil {
		return b
	}
	return json.RawMessage("{}")
}

// only is p restricted to the keys keep accepts.
func (p Parameters) only(keep func(string) bool) Parameters {
	out := Parameters{All: map[string]json.RawMessage{}, FromSecret: map[string]bool{}, Salt: p.Salt}
	for k, v := range p.All {
		if keep(k) {
			out.All[k] = v
			if p.FromSecret[k] {
				out.FromSecret[k] = true
			}
		}
	}
	return out
}

func (p Parameters) subset(keep func(string) bool) json.RawMessage {
	if len(p.All) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, k := range sortedKeys(p.All) {
		if keep != nil && !keep(k) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(compact(p.All[k]))
		n++
	}
	b.WriteByte('}')
	return b.Bytes()
}

// checksumPrefix marks a checksum keyed with the record's salt. A checksum without it
// was written by an earlier release: a plain SHA-256 ("sha256:..."), still compared as
// such until the next call rewrites it.
const checksumPrefix = "hmac-sha256:"

// Checksum identifies the full parameters, secret values included, without revealing
// them: a changed Secret shows as a changed checksum, which becomes an update. It is an
// HMAC-SHA256 keyed with the record's salt (Salt), so a checksum cannot be matched
// against a table of digests of likely values, nor against another record's.
func (p Parameters) Checksum() string {
	if len(p.All) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, []byte(p.Salt))
	m.Write(p.JSON())
	return checksumPrefix + hex.EncodeToString(m.Sum(nil))
}

// SameChecksum reports whether stored, a checksum from the record, identifies these
// parameters. A checksum of an earlier release is compared the way it was made, so an
// upgrade changes no instance.
func (p Parameters) SameChecksum(stored string) bool {
	if stored == "" || strings.HasPrefix(stored, checksumPrefix) {
		return p.Checksum() == stored
	}
	if len(p.All) == 0 {
		return false
	}
	sum := sha256.Sum256(p.JSON())
	return stored == "sha256:"+hex.EncodeToString(sum[:])
}

// salted gives p the record's salt, creating the salt the first time parameters are
// checksummed; the record keeps it from its next write on.
func (p Parameters) salted(st *v1alpha1.OperationStatus) Parameters {
	if len(p.All) > 0 && st.ParametersSalt == "" {
		st.ParametersSalt = rand.Text() // 128 random bits
	}
	p.Salt = st.ParametersSalt
	return p
}

// InlineHashes identify each inline parameter, so an update can send only what changed.
// The inline values are in the record's spec anyway, so these hashes need no key.
// Secret-sourced values are never hashed one by one: a short secret's hash could be
// guessed.
func (p Parameters) InlineHashes() map[string]string {
	out := map[string]string{}
	for k, v := range p.All {
		if p.FromSecret[k] {
			continue
		}
		sum := sha256.Sum256(compact(v))
		out[k] = hex.EncodeToString(sum[:8])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Changed returns the parameters an update must send given the inline hashes the broker
// holds: inline parameters that are new or changed, and every secret-sourced one (their
// values cannot be compared, and re-sending an unchanged value is harmless).
func (p Parameters) Changed(held map[string]string) json.RawMessage { return p.changed(held).body() }

func (p Parameters) changed(held map[string]string) Parameters {
	now := p.InlineHashes()
	return p.only(func(k string) bool {
		return p.FromSecret[k] || held == nil || held[k] != now[k]
	})
}

func compact(v json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return v
	}
	return b.Bytes()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseParamFlags turns repeated -p key=value flags into parameters. A key given several
// times becomes an array. Values are typed by the schema's property type where the plan
// has a schema (integer, number, boolean, object, array), else kept as strings.
func ParseParamFlags(flags []string, schema json.RawMessage) (map[string]any, error) {
	types := propertyTypes(schema)
	raw := map[string][]string{}
	var order []string
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("invalid parameter %q: use -p key=value", f)
		}
		if _, seen := raw[k]; !seen {
			order = append(order, k)
		}
		raw[k] = append(raw[k], v)
	}
	out := map[string]any{}
	for _, k := range order {
		vs := raw[k]
		t := types[k]
		if len(vs) > 1 || t.typ == "array" {
			arr := make([]any, 0, len(vs))
			for _, v := range vs {
				x, err := typedValue(k, v, t.items)
				if err != nil {
					return nil, err
				}
				arr = append(arr, x)
			}
			out[k] = arr
			continue
		}
		x, err := typedValue(k, vs[0], t.typ)
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	return out, nil
}

type propType struct{ typ, items string }

func propertyTypes(schema json.RawMessage) map[string]propType {
	var s struct {
		Properties map[string]struct {
			Type  any `json:"type"`
			Items struct {
				Type any `json:"type"`
			} `json:"items"`
		} `json:"properties"`
	}
	out := map[string]propType{}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return out
	}
	first := func(t any) string {
		switch t := t.(type) {
		case string:
			return t
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok && s != "null" {
					return s
				}
			}
		}
		return ""
	}
	for k, p := range s.Properties {
		out[k] = propType{typ: first(p.Type), items: first(p.Items.Type)}
	}
	return out
}

func typedValue(key, v, typ string) (any, error) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not an integer", key, v)
		}
		return n, nil
	case "number":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not a number", key, v)
		}
		return json.Number(v), nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not true or false", key, v)
		}
		return b, nil
	case "object", "array":
		var x any
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not valid JSON (the plan's schema wants an %s)", key, v, typ)
		}
		return x, nil
	}
	return v, nil
}

// ValidateParameters checks params against a plan's JSON schema (draft-04 and later, by
// its $schema) before anything is recorded or sent. Errors name the parameter:
// "parameter storage_gb: maximum: got 11, want 10". A nil schema accepts everything.
func ValidateParameters(schema json.RawMessage, params json.RawMessage) error {
	sch, err := compileSchema(schema)
	if sch == nil || err != nil {
		return err
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	problems, err := sch.Validate(params)
	if err != nil || len(problems) == 0 {
		return err
	}
	return invalidParameters(problems, nil)
}

// compileSchema compiles a plan's parameters schema; nil for none.
func compileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
		return nil, nil
	}
	sch, err := jsonschema.Compile(schema)
	if err != nil {
		return nil, fmt.Errorf("the plan's parameter schema is invalid: %w", err)
	}
	return sch, nil
}

// invalidParameters is the error listing problems, one line per parameter, sorted; fix,
// when not nil, says how to mend a problem (empty: nothing to add).
func invalidParameters(problems []jsonschema.Problem, fix func(jsonschema.Problem) string) error {
	msgs := make([]string, 0, len(problems))
	for _, pr := range problems {
		name := "parameters"
		if len(pr.Path) > 0 {
			name = "parameter " + strings.Join(pr.Path, ".")
		}
		m := name + ": " + pr.Message
		if fix != nil {
			if f := fix(pr); f != "" {
				m += " (" + f + ")"
			}
		}
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	uniq := msgs[:0]
	for i, m := range msgs {
		if i == 0 || m != msgs[i-1] {
			uniq = append(uniq, m)
		}
	}
	return &InvalidParametersError{Problems: uniq}
}

// InvalidParametersError lists what is wrong with the parameters, one problem per
// parameter.
type InvalidParametersError struct{ Problems []string }

func (e *InvalidParametersError) Error() string {
	return "invalid parameters: " + strings.Join(e.Problems, "; ")
}

// planUpdateBody decides which parameters an update sends, and checks exactly those
// against the plan's update schema. The engine sends p.changed(held) (see update in
// step_update.go): every parameter whose value the broker does not hold, and every
// secret-sourced one. To that come the keys the user named (named), even when their
// value is unchanged, and the keys the update schema asks every update for, wherever it
// does (required, dependentRequired, inside allOf, anyOf, oneOf, then, else), that the
// instance holds unchanged: an OSB broker keeps what an update does not send, so
// sending them again changes nothing but lets the update through. Those keys lose their
// hash in held, the record's status.provisioned.parameterHashes, so that p.changed of
// the held returned is the body checked here, to the key.
//
// held nil means every parameter is sent (after "touch", or when what the broker holds
// is unknown). It returns the new held and the keys added because the schema asks for
// them; the error names what the body lacks and how to give it.
func planUpdateBody(schema json.RawMessage, p Parameters, held map[string]string, named []string) (map[string]string, []string, error) {
	if held != nil {
		held = maps.Clone(held)
		for _, k := range named {
			delete(held, k)
		}
	}
	sch, err := compileSchema(schema)
	if sch == nil || err != nil {
		return held, nil, err
	}
	var added []string
	for {
		body := p.changed(held)
		v, err := decodeJSON(body.body())
		if err != nil {
			return nil, nil, err
		}
		supply := func(k string) bool {
			_, ok := p.All[k]
			_, sent := body.All[k]
			return ok && !sent
		}
		supplied, problems, err := sch.ValidateSupplied(v, supply)
		if err != nil {
			return nil, nil, err
		}
		if len(supplied) > 0 {
			for _, k := range supplied {
				delete(held, k)
			}
			added = append(added, supplied...)
			continue // the body changed: what the schema says of it may have too
		}
		if len(problems) > 0 {
			return nil, nil, invalidParameters(problems, missingFix)
		}
		sort.Strings(added)
		return held, added, nil
	}
}

// missingFix says how to give the parameters an update must send and the instance has
// no value for.
func missingFix(pr jsonschema.Problem) string {
	if len(pr.Path) > 0 || len(pr.Missing) == 0 {
		return ""
	}
	flags := make([]string, len(pr.Missing))
	for i, k := range pr.Missing {
		flags[i] = "-p " + k + "=VALUE"
	}
	return "the plan's update schema asks for it in the update and the instance has no value to send: give it with " + strings.Join(flags, " ")
}

// decodeJSON decodes a JSON value, numbers kept as json.Number.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
