package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// LimitFlags are the consumer limits of an instance: --max-bindings and
// --allowed-namespaces, of provision and update.
type LimitFlags struct {
	MaxBindings       int32
	AllowedNamespaces []string

	maxGiven, allowedGiven bool
}

// AddFlags adds the flags to fs.
func (l *LimitFlags) AddFlags(fs *pflag.FlagSet) {
	fs.Int32Var(&l.MaxBindings, "max-bindings", 0, "The most bindings the instance may have, from every namespace together (0: no limit).")
	fs.StringSliceVar(&l.AllowedNamespaces, "allowed-namespaces", nil, `The only namespaces whose bindings may use the instance, its own included, comma-separated ("": any namespace it is shared with).`)
}

// Validate checks the values; changed reports which flags were given.
func (l *LimitFlags) Validate(changed *pflag.FlagSet) error {
	l.maxGiven = changed != nil && changed.Changed("max-bindings")
	l.allowedGiven = changed != nil && changed.Changed("allowed-namespaces")
	if l.MaxBindings < 0 {
		return cmdutil.UsageErrorf("--max-bindings must be 0 (no limit) or more, not %d", l.MaxBindings)
	}
	var clean []string
	for _, ns := range l.AllowedNamespaces {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return cmdutil.UsageErrorf("--allowed-namespaces: %q is not a valid namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if !slices.Contains(clean, ns) {
			clean = append(clean, ns)
		}
	}
	slices.Sort(clean)
	l.AllowedNamespaces = clean
	return nil
}

// Given reports whether either flag was given.
func (l *LimitFlags) Given() bool { return l.maxGiven || l.allowedGiven }

// Apply writes the limits given into spec and says what changed.
func (l *LimitFlags) Apply(spec *v1alpha1.ServiceInstanceSpec) []string {
	var changes []string
	if l.maxGiven {
		var m *int32
		if l.MaxBindings > 0 {
			v := l.MaxBindings
			m = &v
		}
		if (m == nil) != (spec.MaxBindings == nil) || (m != nil && *m != *spec.MaxBindings) {
			spec.MaxBindings = m
			if m == nil {
				changes = append(changes, "no limit on bindings")
			} else {
				changes = append(changes, fmt.Sprintf("at most %d bindings", *m))
			}
		}
	}
	if l.allowedGiven && !slices.Equal(l.AllowedNamespaces, spec.AllowedNamespaces) {
		spec.AllowedNamespaces = l.AllowedNamespaces
		if len(l.AllowedNamespaces) == 0 {
			changes = append(changes, "bindings from any namespace it is shared with")
		} else {
			changes = append(changes, "bindings only from namespaces "+strings.Join(l.AllowedNamespaces, ", "))
		}
	}
	return changes
}
