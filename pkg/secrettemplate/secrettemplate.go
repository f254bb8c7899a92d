// Package secrettemplate renders the keys of a binding's Secret from Go text/template
// templates (a binding's spec.secretTemplate, "bind --secret-template FILE").
//
// A template sees only its data: the broker's credentials, the instance (name,
// namespace, class, plan, id) and the binding (name, namespace, secretName, id). Its
// functions (Functions) read nothing else: no environment, no file, no network. The
// templates are bounded (Check): at most MaxKeys keys, MaxTemplateBytes of template a
// key, no {{define}}, {{template}} or {{block}} (so no recursion), a {{range}} only over
// a field of the data and never inside another {{range}}; a rendered value is at most
// MaxValueBytes, all of them together at most MaxTotalBytes.
//
// Rendered values are secrets: no error of this package contains one. Errors name the
// Secret key whose template failed and why, never a value of the data.
package secrettemplate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
)

// The bounds of a template.
const (
	// MaxKeys is the most keys a template renders.
	MaxKeys = 64
	// MaxTemplateBytes is the longest template of one key.
	MaxTemplateBytes = 8 << 10
	// MaxValueBytes is the longest value one key renders.
	MaxValueBytes = 64 << 10
	// MaxTotalBytes is the most all the keys render together.
	MaxTotalBytes = 256 << 10
)

// Instance is what a template sees of the instance as .instance.
type Instance struct {
	Name, Namespace, Class, Plan, ID string
}

// Binding is what a template sees of the binding as .binding.
type Binding struct {
	Name, Namespace, SecretName, ID string
}

// Data is what a template renders from.
type Data struct {
	// Credentials are the broker's credentials as its answer gave them (JSON types).
	Credentials map[string]any
	Instance    Instance
	Binding     Binding
}

// value is d as the templates see it: lower-case names, as in JSON.
func (d Data) value() map[string]any {
	creds := d.Credentials
	if creds == nil {
		creds = map[string]any{}
	}
	return map[string]any{
		"credentials": creds,
		"instance": map[string]any{"name": d.Instance.Name, "namespace": d.Instance.Namespace,
			"class": d.Instance.Class, "plan": d.Instance.Plan, "id": d.Instance.ID},
		"binding": map[string]any{"name": d.Binding.Name, "namespace": d.Binding.Namespace,
			"secretName": d.Binding.SecretName, "id": d.Binding.ID},
	}
}

// KeyError is the failure of the template of one Secret key.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("secret template key %q: %v", e.Key, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// Keys returns the keys t renders, sorted; none for a nil t.
func Keys(t *v1alpha1.SecretTemplate) []string {
	if t == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(t.Keys))
}

// Check checks t without data: its size, its keys (valid Secret keys), and each
// template (parsed with the functions of the package, within the bounds of the package
// doc). nil t is nothing to check.
func Check(t *v1alpha1.SecretTemplate) error {
	_, err := parseAll(t)
	return err
}

// parseAll parses every template of t, after the checks of Check.
func parseAll(t *v1alpha1.SecretTemplate) (map[string]*template.Template, error) {
	if t == nil {
		return nil, nil
	}
	if len(t.Keys) == 0 {
		return nil, errors.New("secret template has no keys: give keys, a map of Secret key to template")
	}
	if len(t.Keys) > MaxKeys {
		return nil, fmt.Errorf("secret template has %d keys, more than the %d a template may render", len(t.Keys), MaxKeys)
	}
	out := make(map[string]*template.Template, len(t.Keys))
	for _, k := range Keys(t) {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return nil, &KeyError{Key: k, Err: fmt.Errorf("not a valid Secret key: %s", strings.Join(errs, "; "))}
		}
		src := t.Keys[k]
		if len(src) > MaxTemplateBytes {
			return nil, &KeyError{Key: k, Err: fmt.Errorf("the template is %d bytes, more than the %d a key's template may have", len(src), MaxTemplateBytes)}
		}
		tpl, err := template.New(k).Option("missingkey=error").Funcs(functions(false)).Parse(src)
		if err != nil {
			return nil, &KeyError{Key: k, Err: parseReason(k, err)}
		}
		if err := bounded(tpl); err != nil {
			return nil, &KeyError{Key: k, Err: err}
		}
		out[k] = tpl
	}
	return out, nil
}

// parseReason is a parse error without the "template: KEY:" prefix text/template adds.
func parseReason(key string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "template: "+key+":")
	return errors.New("the template does not parse: line " + msg)
}

// bounded refuses what could make a template run long or recurse: another template
// defined or called, a range over anything but a field of the data, a range in a range.
func bounded(tpl *template.Template) error {
	if ts := tpl.Templates(); len(ts) > 1 {
		return errors.New("{{define}} and {{block}} are not allowed: a key's template is one template")
	}
	if tpl.Tree == nil || tpl.Tree.Root == nil {
		return nil
	}
	return walk(tpl.Tree.Root, 0)
}

func walk(n parse.Node, ranges int) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := walk(c, ranges); err != nil {
				return err
			}
		}
	case *parse.TemplateNode:
		return fmt.Errorf("{{template %q}} is not allowed: a key's template cannot call another", n.Name)
	case *parse.IfNode:
		return walkBranch(&n.BranchNode, ranges)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode, ranges)
	case *parse.RangeNode:
		if ranges > 0 {
			return errors.New("a {{range}} inside another {{range}} is not allowed")
		}
		if !overData(n.Pipe) {
			return fmt.Errorf("{{range %s}} is not allowed: a range goes over a field of the data, such as {{range .credentials.hosts}}", n.Pipe)
		}
		return walkBranch(&n.BranchNode, ranges+1)
	}
	return nil
}

func walkBranch(b *parse.BranchNode, ranges int) error {
	if err := walk(b.List, ranges); err != nil {
		return err
	}
	return walk(b.ElseList, ranges)
}

// overData reports whether p is a field of the data: ., .a.b, $.a.b, or $.
func overData(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.DotNode, *parse.FieldNode:
		return true
	case *parse.VariableNode:
		return len(a.Ident) > 0 && a.Ident[0] == "$"
	}
	return false
}

// Render renders every key of t from d. A key whose template fails is a *KeyError
// naming it; the message holds no value of d.
func Render(t *v1alpha1.SecretTemplate, d Data) (map[string][]byte, error) {
	tpls, err := parseAll(t)
	if err != nil || tpls == nil {
		return nil, err
	}
	return render(tpls, d, false)
}

func render(tpls map[string]*template.Template, d Data, check bool) (map[string][]byte, error) {
	v := d.value()
	out := make(map[string][]byte, len(tpls))
	total := 0
	for _, k := range slices.Sorted(maps.Keys(tpls)) {
		tpl := tpls[k]
		if check {
			tpl = tpl.Funcs(functions(true))
		}
		w := &capped{max: min(MaxValueBytes, MaxTotalBytes-total)}
		if err := tpl.Execute(w, v); err != nil {
			if errors.Is(err, errTooLong) {
				return nil, &KeyError{Key: k, Err: fmt.Errorf("the rendered value is longer than %d bytes (or all keys together longer than %d)", MaxValueBytes, MaxTotalBytes)}
			}
			if check && dataDependent(err) {
				continue
			}
			return nil, &KeyError{Key: k, Err: execReason(k, err, d)}
		}
		total += w.buf.Len()
		out[k] = w.buf.Bytes()
	}
	return out, nil
}

// CheckWith checks t as Check does, then renders it against placeholders: every key of
// credentialKeys holds a placeholder string, and the instance and the binding are d's.
// An expression on a credential fails only when it cannot work on any value (an
// expression the broker's answer decides is checked when the answer comes); anything
// else that fails is a *KeyError naming the key.
func CheckWith(t *v1alpha1.SecretTemplate, credentialKeys []string, d Data) error {
	tpls, err := parseAll(t)
	if err != nil || tpls == nil {
		return err
	}
	d.Credentials = make(map[string]any, len(credentialKeys))
	for _, k := range credentialKeys {
		d.Credentials[k] = Placeholder
	}
	_, err = render(tpls, d, true)
	return err
}

// Placeholder is the value of every credential in CheckWith, and what a dry run shows
// for a value.
const Placeholder = "********"

// dataDependent reports whether a check-mode execution error comes from the
// credentials, whose shape is known only from the broker's answer.
func dataDependent(err error) bool {
	var ee template.ExecError
	if !errors.As(err, &ee) {
		return false
	}
	msg := ee.Error()
	at := strings.Index(msg, " at <")
	if at < 0 {
		return true
	}
	ctx := msg[at:]
	if end := strings.Index(ctx, ">: "); end >= 0 {
		ctx = ctx[:end+1]
	}
	// A credential, a variable, or the dot inside range/with may hold credential data.
	if strings.Contains(ctx, "credentials") || strings.Contains(ctx, "$") {
		return true
	}
	for _, m := range fieldRef.FindAllStringSubmatch(ctx, -1) {
		if m[2] != "instance" && m[2] != "binding" {
			return true
		}
	}
	return false
}

// fieldRef is a field of the dot in an execution error's context: ".name", or "." alone.
var fieldRef = regexp.MustCompile(`(^|[\s(<])\.([A-Za-z_][A-Za-z0-9_]*)?`)

// execReason is an execution error without the "template: KEY:" prefix, and without its
// own words when those quote a value of d.
func execReason(key string, err error, d Data) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "template: "+key+":")
	msg = strings.Replace(msg, fmt.Sprintf("executing %q ", key), "", 1)
	if credentials.MentionsValue(msg, d.Credentials) {
		// Keep where it failed (template text, not data) and drop why.
		if i := strings.Index(msg, ">: "); i >= 0 {
			msg = msg[:i+1] + ": the credentials' values do not fit this expression"
		} else {
			msg = "the credentials' values do not fit the template"
		}
	}
	return errors.New("rendering failed at line " + msg)
}

var errTooLong = errors.New("rendered value too long")

// capped is a buffer that refuses to grow past max bytes.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		return 0, errTooLong
	}
	return c.buf.Write(p)
}

// Apply returns the Secret data of a binding with a template: data (the credentials as
// encoded and transformed) with the rendered keys set over it, or the rendered keys
// alone when t.Only. nil t returns data as it is. data is not modified.
func Apply(t *v1alpha1.SecretTemplate, data map[string][]byte, d Data) (map[string][]byte, error) {
	if t == nil {
		return data, nil
	}
	rendered, err := Render(t, d)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(data)+len(rendered))
	if !t.Only {
		for k, v := range data {
			out[k] = slices.Clone(v)
		}
	}
	maps.Copy(out, rendered)
	return out, nil
}
