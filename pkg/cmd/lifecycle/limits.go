package lifecycle

import (
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// LimitFlags are the consumer limits of an instance: --max-bindings and
// --allowed-namespaces, of provision and update.
type LimitFlags struct {
	MaxBindings       int32
	AllowedNamespaces []string

	// MaxBindingsGiven and AllowedNamespacesGiven say which of the flags the command
	// line gave (SetGiven): only those change the instance.
	MaxBindingsGiven, AllowedNamespacesGiven bool
}

// AddFlags adds the flags to fs.
func (l *LimitFlags) AddFlags(fs *pflag.FlagSet) {
	fs.Int32Var(&l.MaxBindings, "max-bindings", 0, "The most bindings the instance may have, from every namespace together (0: no limit).")
	fs.StringSliceVar(&l.AllowedNamespaces, "allowed-namespaces", nil, `The only namespaces whose bindings may use the instance, its own included, comma-separated ("": any namespace it is shared with).`)
}

// SetGiven records which of the flags fs (the parsed command line) gave.
func (l *LimitFlags) SetGiven(fs *pflag.FlagSet) {
	l.MaxBindingsGiven = fs != nil && fs.Changed("max-bindings")
	l.AllowedNamespacesGiven = fs != nil && fs.Changed("allowed-namespaces")
}

// Validate checks the values.
func (l *LimitFlags) Validate() error {
	if l.MaxBindings < 0 {
		return cmdutil.UsageErrorf("--max-bindings must be 0 (no limit) or more, not %d", l.MaxBindings)
	}
	for _, ns := range l.AllowedNamespaces {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return cmdutil.UsageErrorf("--allowed-namespaces: %q is not a valid namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	return nil
}

// Given reports whether either flag was given.
func (l *LimitFlags) Given() bool { return l.MaxBindingsGiven || l.AllowedNamespacesGiven }

// Limits are the limits the flags give, for the engine.
func (l *LimitFlags) Limits() engine.Limits {
	var out engine.Limits
	if l.MaxBindingsGiven {
		m := l.MaxBindings
		out.MaxBindings = &m
	}
	if l.AllowedNamespacesGiven {
		allowed := append([]string(nil), l.AllowedNamespaces...)
		out.AllowedNamespaces = &allowed
	}
	return out
}
