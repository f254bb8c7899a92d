// Package complete completes the names that kubectl catalog's flags and arguments take:
// instances, bindings, brokers, classes, plans, namespaces, Secrets, workloads, kubeconfig
// contexts, and the values of enum flags.
//
// Every function lists through the factory's clients with label-selected lists, under
// Timeout. A completion that fails (no kubeconfig, no access, a slow server) completes
// nothing and prints nothing: the shell must never show an error in the middle of a
// command line.
package complete

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// Timeout bounds the API requests of one completion: a shell waits for it.
var Timeout = 3 * time.Second

// DryRunValues are the values of every --dry-run that takes one.
var DryRunValues = []string{"none", "client", "server"}

// lister returns candidates, each "NAME" or "NAME\tDESCRIPTION"; run filters them by the
// typed prefix.
type lister func(ctx context.Context, c *call) ([]string, error)

// call is one completion request.
type call struct {
	f          *cmdutil.Factory
	cmd        *cobra.Command
	args       []string
	toComplete string
}

// namespace is the namespace the command works in (-n, or the kubeconfig's).
func (c *call) namespace() (string, error) {
	ns, _, err := c.f.Namespace()
	return ns, err
}

// flag is the value of the command's flag name; "" when the command has no such flag.
func (c *call) flag(name string) string {
	fl := c.cmd.Flags().Lookup(name)
	if fl == nil {
		return ""
	}
	return fl.Value.String()
}

// run makes a completion function of list: candidates starting with what was typed, no
// file names, nothing at all on any error.
func run(f *cmdutil.Factory, list lister) cobra.CompletionFunc {
	return runWith(f, list, cobra.ShellCompDirectiveNoFileComp)
}

func runWith(f *cmdutil.Factory, list lister, directive cobra.ShellCompDirective) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, Timeout)
		defer cancel()
		candidates, err := list(ctx, &call{f: f, cmd: cmd, args: args, toComplete: toComplete})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return matching(candidates, toComplete), directive
	}
}

// matching keeps the candidates whose name starts with prefix, once each, in order.
func matching(candidates []string, prefix string) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range candidates {
		name, _, _ := strings.Cut(c, "\t")
		if strings.HasPrefix(name, prefix) && !seen[name] {
			seen[name] = true
			out = append(out, c)
		}
	}
	return out
}

// First completes only the first argument with fn: for commands that take one name.
func First(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(cmd, args, toComplete)
	}
}

// Each completes every argument with fn, leaving out the names already given: for
// commands that take a list of names.
func Each(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		candidates, directive := fn(cmd, args, toComplete)
		var out []string
		for _, c := range candidates {
			name, _, _ := strings.Cut(c, "\t")
			if !slices.Contains(args, name) {
				out = append(out, c)
			}
		}
		return out, directive
	}
}

// Fixed completes one of values: an enum flag.
func Fixed(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

// DryRun completes the values of --dry-run.
func DryRun() cobra.CompletionFunc { return Fixed(DryRunValues...) }

// CommaList completes a comma-separated list whose items fn completes: the item after
// the last comma, leaving out the items already in the list.
func CommaList(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		given := strings.Split(strings.TrimSuffix(done, ","), ",")
		candidates, directive := fn(cmd, args, last)
		var out []string
		for _, c := range candidates {
			if name, _, _ := strings.Cut(c, "\t"); !slices.Contains(given, name) {
				out = append(out, done+c)
			}
		}
		return out, directive | cobra.ShellCompDirectiveNoSpace
	}
}

// byName completes the flags that mean the same wherever a command has them.
func byName(f *cmdutil.Factory) map[string]cobra.CompletionFunc {
	namespaces, secrets := Namespaces(f), Secrets(f)
	return map[string]cobra.CompletionFunc{
		"namespace":               namespaces,
		"catalog-namespace":       namespaces,
		"instance-namespace":      namespaces,
		"to-namespace":            namespaces,
		"from-namespace":          namespaces,
		"reconcile-namespace":     namespaces,
		"allowed-namespaces":      CommaList(namespaces),
		"context":                 Contexts(f),
		"cluster":                 Clusters(f),
		"user":                    Users(f),
		"broker":                  Brokers(f),
		"class":                   Classes(f),
		"instance":                Instances(f),
		"params-from-secret":      secrets,
		"credentials-from-secret": secrets,
		"add-keys-from-secret":    secrets,
		"basic-auth-secret":       BrokerSecrets(f),
		"bearer-token-secret":     BrokerSecrets(f),
		"dry-run":                 DryRun(),
	}
}

// Flags registers, on every command of the tree, the completion of the flags that mean
// the same wherever they appear (--namespace and the other namespace flags, --context,
// --broker, --class, --instance, the Secret flags, --dry-run), unless the command
// registered its own. Boolean flags are left alone (an old boolean --dry-run included).
func Flags(root *cobra.Command, f *cmdutil.Factory) {
	table := byName(f)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			fn, ok := table[fl.Name]
			if !ok || fl.Value.Type() == "bool" {
				return
			}
			if _, has := c.GetFlagCompletionFunc(fl.Name); has {
				return
			}
			_ = c.RegisterFlagCompletionFunc(fl.Name, fn)
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	NoFilesByDefault(root)
}

// NoFilesByDefault makes every runnable command of the tree that has no completion of
// its arguments complete none (instead of the shell's file names): those commands take
// no arguments, or subcommands, which cobra completes.
func NoFilesByDefault(c *cobra.Command) {
	if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
		c.ValidArgsFunction = cobra.NoFileCompletions
	}
	for _, sub := range c.Commands() {
		NoFilesByDefault(sub)
	}
}

// Register registers fn as the completion of the flag name of cmd, which must exist.
func Register(cmd *cobra.Command, name string, fn cobra.CompletionFunc) {
	if err := cmd.RegisterFlagCompletionFunc(name, fn); err != nil {
		panic("complete: " + err.Error())
	}
}

// HasCompletion reports whether the flag of cmd completes its value: a completion
// function, or cobra's file name annotations.
func HasCompletion(cmd *cobra.Command, fl *pflag.Flag) bool {
	if _, ok := cmd.GetFlagCompletionFunc(fl.Name); ok {
		return true
	}
	_, file := fl.Annotations[cobra.BashCompFilenameExt]
	_, dir := fl.Annotations[cobra.BashCompSubdirsInDir]
	return file || dir
}

func describe(class, plan string) string {
	switch {
	case class == "":
		return "user-provided"
	case plan == "":
		return class
	}
	return class + "/" + plan
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
