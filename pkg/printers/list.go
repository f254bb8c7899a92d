package printers

import (
	"cmp"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

// ListFlags are the flags the list commands share with kubectl get: -l/--selector,
// --no-headers and --sort-by.
type ListFlags struct {
	Selector  string
	NoHeaders bool
	SortBy    string

	selector labels.Selector
	sortBy   *jsonpath.JSONPath
}

// AddFlags adds -l/--selector, --no-headers and --sort-by to a command listing what
// (e.g. "instances").
func (l *ListFlags) AddFlags(cmd *cobra.Command, what string) {
	l.addFlags(cmd, what, "")
}

// AddWatchedFlags is AddFlags for a command that can also watch (-w): --sort-by's help
// says that it sorts the first listing only.
func (l *ListFlags) AddWatchedFlags(cmd *cobra.Command, what string) {
	l.addFlags(cmd, what, " With -w, it sorts the first listing; the changes print as they arrive.")
}

func (l *ListFlags) addFlags(cmd *cobra.Command, what, sortNote string) {
	cmd.Flags().StringVarP(&l.Selector, "selector", "l", "", fmt.Sprintf("Only the %s whose labels match this label selector (e.g. -l 'team=payments,tier!=dev'), as kubectl get's.", what))
	cmd.Flags().BoolVar(&l.NoHeaders, "no-headers", false, "Print tables without the header row.")
	cmd.Flags().StringVar(&l.SortBy, "sort-by", "", fmt.Sprintf("Sort the %s by this JSONPath expression on their records (e.g. '{.metadata.creationTimestamp}'), as kubectl get's.%s", what, sortNote))
}

// Validate parses the selector and the sort expression, without any I/O.
func (l *ListFlags) Validate() error {
	l.selector, l.sortBy = nil, nil
	if l.Selector != "" {
		sel, err := labels.Parse(l.Selector)
		if err != nil {
			return iostreams.UsageErrorf("--selector %q: %v", l.Selector, err)
		}
		l.selector = sel
	}
	if l.SortBy != "" {
		expr, err := relaxedJSONPath(l.SortBy)
		if err != nil {
			return iostreams.UsageErrorf("--sort-by %q: %v", l.SortBy, err)
		}
		p := jsonpath.New("sort-by").AllowMissingKeys(true)
		if err := p.Parse(expr); err != nil {
			return iostreams.UsageErrorf("--sort-by %q: %v", l.SortBy, err)
		}
		l.sortBy = p
	}
	return nil
}

// LabelSelector is the parsed -l selector, nil without one. Call Validate first.
func (l *ListFlags) LabelSelector() labels.Selector { return l.selector }

// Out is w, or with --no-headers w wrapped so that the tables written to it have no
// header row.
func (l *ListFlags) Out(w io.Writer) io.Writer {
	if l.NoHeaders {
		return headerless{w}
	}
	return w
}

// headerless marks a writer whose tables have no header row (see NewTable).
type headerless struct{ io.Writer }

var jsonPathExpr = regexp.MustCompile(`^\{?(\.?[^{}]+)\}?$`)

// relaxedJSONPath accepts what kubectl's --sort-by accepts: "{.a.b}", ".a.b" or "a.b".
func relaxedJSONPath(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty JSONPath expression")
	}
	m := jsonPathExpr.FindStringSubmatch(s)
	if m == nil {
		return "", fmt.Errorf("not a JSONPath expression: use the form '{.metadata.name}' or '.metadata.name'")
	}
	expr := m[1]
	if !strings.HasPrefix(expr, ".") {
		expr = "." + expr
	}
	return "{" + expr + "}", nil
}

// SortItems sorts items by the --sort-by expression (a stable sort: items with equal
// values keep their order), evaluated on object(item), the record as -o json prints
// it. Items without the field come first. It does nothing without --sort-by, and
// returns a usage error when no item has the field (a mistyped path).
func SortItems[T any](l *ListFlags, items []T, object func(*T) runtime.Object) error {
	if l.sortBy == nil || len(items) == 0 {
		return nil
	}
	keys := make([]reflect.Value, len(items))
	found := false
	for i := range items {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(object(&items[i]))
		if err != nil {
			return fmt.Errorf("--sort-by: %w", err)
		}
		results, err := l.sortBy.FindResults(u)
		if err != nil {
			return iostreams.UsageErrorf("--sort-by %q: %v", l.SortBy, err)
		}
		if len(results) > 0 && len(results[0]) > 0 {
			keys[i], found = results[0][0], true
		}
	}
	if !found {
		return iostreams.UsageErrorf("--sort-by %q: no record has this field", l.SortBy)
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareValues(keys[a], keys[b]) })
	sorted := make([]T, len(items))
	for i, j := range order {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

// compareValues orders JSON values: missing first, numbers by value, the rest by their
// text (timestamps are RFC 3339 strings, which sort by time).
func compareValues(a, b reflect.Value) int {
	a, b = deref(a), deref(b)
	switch {
	case !a.IsValid() || !b.IsValid():
		return cmp.Compare(boolInt(a.IsValid()), boolInt(b.IsValid()))
	}
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			return cmp.Compare(x, y)
		}
	}
	return cmp.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
}

func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

func number(v reflect.Value) (float64, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return 0, false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
