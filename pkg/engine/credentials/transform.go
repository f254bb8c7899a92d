package credentials

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/jsonpath"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// SecretReader reads the data of the Secret name in the binding's namespace. It returns an
// error for which apierrors.IsNotFound is true when there is no such Secret.
type SecretReader func(ctx context.Context, name string) (map[string][]byte, error)

// Apply returns data changed by transforms, applied in order; each transform sees the
// result of the ones before it. data is not modified.
//
// creds is the credentials object of the bind answer, as Encode was given it: AddKey's
// JSONPathExpression is evaluated against it rather than against data, so that numbers and
// nested objects keep their JSON types (e.g. "{.host}:{.port}" or "{.tls.ca}"). A result
// that is an object or array is written as JSON.
//
// The transforms:
//   - RenameKey moves the value of From to To, replacing To if it exists. A missing From
//     is an error that lists the keys present.
//   - AddKey sets Key from exactly one of Value, StringValue and JSONPathExpression,
//     replacing Key if it exists.
//   - AddKeysFrom copies every key of the Secret SecretRef.Name, read with readSecret,
//     replacing keys that exist. A missing Secret is an error that says to create it.
//     SecretRef.Namespace must be empty: the Secret is in the binding's namespace.
//   - RemoveKey removes Key; removing a key that is not there does nothing.
//
// Errors name the transform by its position (1-based), the keys and the Secrets involved;
// they never contain a value of creds, data or a Secret.
func Apply(ctx context.Context, data map[string][]byte, creds map[string]any, transforms []v1alpha1.SecretTransform, readSecret SecretReader) (map[string][]byte, error) {
	out := cloneData(data)
	for i, t := range transforms {
		if err := apply(ctx, out, creds, t, readSecret); err != nil {
			return nil, fmt.Errorf("secret transform %d (%s): %w", i+1, describe(t), err)
		}
	}
	return out, nil
}

// describe is a short, value-free description of t for error messages.
func describe(t v1alpha1.SecretTransform) string {
	var parts []string
	if t.RenameKey != nil {
		parts = append(parts, fmt.Sprintf("renameKey %q to %q", t.RenameKey.From, t.RenameKey.To))
	}
	if t.AddKey != nil {
		parts = append(parts, fmt.Sprintf("addKey %q", t.AddKey.Key))
	}
	if t.AddKeysFrom != nil {
		parts = append(parts, fmt.Sprintf("addKeysFrom secret %q", t.AddKeysFrom.SecretRef.Name))
	}
	if t.RemoveKey != nil {
		parts = append(parts, fmt.Sprintf("removeKey %q", t.RemoveKey.Key))
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

// apply applies one transform to data, in place.
func apply(ctx context.Context, data map[string][]byte, creds map[string]any, t v1alpha1.SecretTransform, readSecret SecretReader) error {
	set := 0
	for _, isSet := range []bool{t.RenameKey != nil, t.AddKey != nil, t.AddKeysFrom != nil, t.RemoveKey != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("exactly one of renameKey, addKey, addKeysFrom and removeKey must be set, found %d", set)
	}
	switch {
	case t.RenameKey != nil:
		return renameKey(data, *t.RenameKey)
	case t.AddKey != nil:
		return addKey(data, creds, *t.AddKey)
	case t.AddKeysFrom != nil:
		return addKeysFrom(ctx, data, *t.AddKeysFrom, readSecret)
	default:
		delete(data, t.RemoveKey.Key)
		return nil
	}
}

func renameKey(data map[string][]byte, r v1alpha1.RenameKeyTransform) error {
	v, ok := data[r.From]
	if !ok {
		return fmt.Errorf("the credentials have no key %q; the keys are: %s", r.From, keyList(data))
	}
	if err := validateKey(r.To); err != nil {
		return err
	}
	delete(data, r.From)
	data[r.To] = v
	return nil
}

func addKey(data map[string][]byte, creds map[string]any, a v1alpha1.AddKeyTransform) error {
	if err := validateKey(a.Key); err != nil {
		return err
	}
	sources := 0
	for _, isSet := range []bool{a.Value != nil, a.StringValue != nil, a.JSONPathExpression != nil} {
		if isSet {
			sources++
		}
	}
	if sources != 1 {
		return fmt.Errorf("exactly one of value, stringValue and jsonPathExpression must be set, found %d", sources)
	}
	switch {
	case a.Value != nil:
		data[a.Key] = slices.Clone(a.Value)
	case a.StringValue != nil:
		data[a.Key] = []byte(*a.StringValue)
	default:
		v, err := evalJSONPath(*a.JSONPathExpression, creds)
		if err != nil {
			return err
		}
		data[a.Key] = v
	}
	return nil
}

// evalJSONPath evaluates the JSONPath template expr (kubectl's dialect) against creds.
func evalJSONPath(expr string, creds map[string]any) ([]byte, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("jsonPathExpression is empty; write e.g. {.host}:{.port}")
	}
	jp := jsonpath.New("jsonPathExpression")
	if err := jp.Parse(expr); err != nil {
		return nil, fmt.Errorf("jsonPathExpression %q is not a valid JSONPath template (write e.g. {.host}:{.port}): %v", expr, err)
	}
	var buf bytes.Buffer
	if err := jp.Execute(&buf, creds); err != nil {
		// The evaluator may quote the data it failed on: say why only when that quotes
		// no credential.
		why := err.Error()
		if MentionsValue(why, creds) {
			why = "it does not match the credentials' structure"
		}
		return nil, fmt.Errorf("jsonPathExpression %q cannot be evaluated against the credentials (keys: %s): %s",
			expr, strings.Join(slices.Sorted(maps.Keys(creds)), ", "), why)
	}
	return buf.Bytes(), nil
}

// MentionsValue reports whether msg contains any scalar value found in v, as text, as a
// whole word: "a" is not found in "hostname", so that short values do not hide every
// reason. A message that mentions a credential's value is never shown.
func MentionsValue(msg string, v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case map[string]any:
		for _, e := range v {
			if MentionsValue(msg, e) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range v {
			if MentionsValue(msg, e) {
				return true
			}
		}
		return false
	case string:
		return containsWord(msg, v)
	default:
		return containsWord(msg, fmt.Sprint(v))
	}
}

// containsWord reports whether s occurs in msg not flanked by a letter or digit where s
// itself begins or ends with one.
func containsWord(msg, s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i+len(s) <= len(msg); {
		j := strings.Index(msg[i:], s)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(s)
		if !(isWordByte(s[0]) && start > 0 && isWordByte(msg[start-1])) &&
			!(isWordByte(s[len(s)-1]) && end < len(msg) && isWordByte(msg[end])) {
			return true
		}
		i = start + 1
	}
	return false
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

func addKeysFrom(ctx context.Context, data map[string][]byte, a v1alpha1.AddKeysFromTransform, readSecret SecretReader) error {
	name := a.SecretRef.Name
	if name == "" {
		return errors.New("secretRef.name is empty")
	}
	if a.SecretRef.Namespace != "" {
		return fmt.Errorf("secret %q: secretRef.namespace %q is not supported; the Secret must be in the binding's namespace", name, a.SecretRef.Namespace)
	}
	if readSecret == nil {
		return fmt.Errorf("secret %q cannot be read here", name)
	}
	from, err := readSecret(ctx, name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("secret %q not found in the binding's namespace: create it, or remove the transform", name)
	}
	if err != nil {
		return fmt.Errorf("read secret %q: %w", name, err)
	}
	for k, v := range from {
		data[k] = slices.Clone(v)
	}
	return nil
}

// keyList is the sorted keys of data, comma-separated, or "(none)".
func keyList(data map[string][]byte) string {
	if len(data) == 0 {
		return "(none)"
	}
	return strings.Join(Keys(data), ", ")
}
