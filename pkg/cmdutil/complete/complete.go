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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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

// storeIn is the store and the command's namespace, to list the records there.
func (c *call) storeIn() (*store.Store, string, error) {
	st, err := c.f.Store()
	if err != nil {
		return nil, "", err
	}
	ns, err := c.namespace()
	if err != nil {
		return nil, "", err
	}
	return st, ns, nil
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

// Instances completes the names of the instances in the command's namespace.
func Instances(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		st, ns, err := c.storeIn()
		if err != nil {
			return nil, err
		}
		items, err := st.Instances().List(ctx, ns, store.Filter{})
		if len(items) == 0 {
			return nil, err
		}
		var out []string
		for _, i := range items {
			out = append(out, i.Name+"\t"+describe(i.Spec.ClassExternalName, i.Spec.PlanExternalName))
		}
		return out, nil
	})
}

// Bindings completes the names of the bindings in the command's namespace; of the
// instance in --instance, or given as the first argument when instanceArg, when there is
// one.
func Bindings(f *cmdutil.Factory, instanceArg bool) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		st, ns, err := c.storeIn()
		if err != nil {
			return nil, err
		}
		filter := store.Filter{Instance: c.flag("instance")}
		if filter.Instance == "" && instanceArg && len(c.args) > 0 {
			filter.Instance = c.args[0]
		}
		items, err := st.Bindings().List(ctx, ns, filter)
		if len(items) == 0 {
			return nil, err
		}
		var out []string
		for _, b := range items {
			_, inst := b.InstanceRef()
			out = append(out, b.Name+"\tinstance "+inst)
		}
		return out, nil
	})
}

// Records completes the arguments of "wait": TYPE/NAME of the instances and bindings
// in the command's namespace (instance/ and binding/ first), or the names of the TYPE
// given as the first argument without a slash.
func Records(f *cmdutil.Factory) cobra.CompletionFunc {
	instances, bindings := Instances(f), Bindings(f, false)
	names := func(kind string) cobra.CompletionFunc {
		switch strings.ToLower(kind) {
		case "instance", "instances", "inst", "serviceinstance", "serviceinstances":
			return instances
		case "binding", "bindings", "bnd", "servicebinding", "servicebindings":
			return bindings
		}
		return nil
	}
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !strings.Contains(args[0], "/") {
			fn := names(args[0])
			if fn == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return Each(fn)(cmd, args[1:], toComplete)
		}
		kind, name, ok := strings.Cut(toComplete, "/")
		if !ok {
			return matching([]string{"instance/", "binding/"}, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		fn := names(kind)
		if fn == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		candidates, directive := fn(cmd, nil, name)
		var out []string
		for _, c := range candidates {
			if !slices.Contains(args, kind+"/"+strings.SplitN(c, "\t", 2)[0]) {
				out = append(out, kind+"/"+c)
			}
		}
		return out, directive
	}
}

// Brokers completes the names of the brokers the command's namespace sees: its own and
// the cluster-scoped ones.
func Brokers(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		st, ns, err := c.storeIn()
		if err != nil {
			return nil, err
		}
		var out []string
		var firstErr error
		for _, n := range []string{ns, f.CatalogNamespace} {
			bs, err := st.Brokers().List(ctx, n, store.Filter{})
			if err != nil && firstErr == nil {
				firstErr = err
			}
			for _, b := range bs {
				out = append(out, b.Name+"\t"+string(b.Spec.Scope)+" broker")
			}
		}
		if len(out) == 0 {
			return nil, firstErr
		}
		return out, nil
	})
}

// offerings lists what the namespace may provision, of the broker in --broker and of
// class when given.
func offerings(ctx context.Context, c *call, broker, class string) ([]marketplace.Offering, error) {
	st, ns, err := c.storeIn()
	if err != nil {
		return nil, err
	}
	offers, err := marketplace.List(ctx, st, ns, marketplace.Filter{Broker: broker, Class: class}, marketplace.InCatalogNamespace(c.f.CatalogNamespace))
	if len(offers) == 0 {
		return nil, err
	}
	return offers, nil
}

// Classes completes the names of the classes the command's namespace may use (access
// rules applied), of the broker in --broker when the command has it set.
func Classes(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		offers, err := offerings(ctx, c, c.flag("broker"), "")
		if err != nil {
			return nil, err
		}
		var out []string
		for _, o := range offers {
			out = append(out, o.Class.Spec.ExternalName+"\t"+firstLine(o.Class.Spec.Description))
		}
		return out, nil
	})
}

// Plans completes plan names: of the class in --class when the command has it set, or
// else CLASS/PLAN of every class the namespace may use.
func Plans(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		return plans(ctx, c, c.flag("broker"), c.flag("class"))
	})
}

func plans(ctx context.Context, c *call, broker, class string) ([]string, error) {
	offers, err := offerings(ctx, c, broker, class)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range offers {
		for _, p := range o.Plans {
			name := p.ExternalName
			if class == "" {
				name = o.Class.Spec.ExternalName + "/" + name
			}
			out = append(out, name+"\t"+firstLine(p.Description))
		}
	}
	return out, nil
}

// ClassOrPlan completes CLASS, or CLASS/PLAN once a slash is typed.
func ClassOrPlan(f *cmdutil.Factory) cobra.CompletionFunc {
	classes, plans := Classes(f), Plans(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if strings.Contains(toComplete, "/") || cmd.Flags().Changed("class") {
			return plans(cmd, args, toComplete)
		}
		return classes(cmd, args, toComplete)
	}
}

// PlansOfInstance completes the plans of the class of the instance named by the first
// argument: update's --plan.
func PlansOfInstance(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		if len(c.args) == 0 {
			return nil, nil
		}
		st, ns, err := c.storeIn()
		if err != nil {
			return nil, err
		}
		inst, err := st.Instances().Get(ctx, ns, c.args[0])
		if err != nil {
			return nil, err
		}
		if inst.Spec.ClassExternalName == "" {
			return nil, nil
		}
		out, err := plans(ctx, c, inst.Spec.BrokerName, inst.Spec.ClassExternalName)
		if err != nil {
			return nil, err
		}
		for i, p := range out {
			if name, _, _ := strings.Cut(p, "\t"); name == inst.Spec.PlanExternalName {
				out[i] = name + "\tthe current plan"
			}
		}
		return out, nil
	})
}

// Namespaces completes namespace names, when the user may list namespaces.
func Namespaces(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, namespaces)
}

func namespaces(ctx context.Context, c *call) ([]string, error) {
	core, err := c.f.KubernetesClient()
	if err != nil {
		return nil, err
	}
	list, err := core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out, nil
}

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

// Secrets completes the names of the Secrets in the command's namespace. It lists them
// as metadata only: no Secret's data is read.
func Secrets(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		ns, err := c.namespace()
		if err != nil {
			return nil, err
		}
		return secrets(ctx, c, ns)
	})
}

// BrokerSecrets completes the names of the Secrets in the namespace of the broker being
// registered: the catalog namespace, or the command's with --scope namespace.
func BrokerSecrets(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		ns := f.CatalogNamespace
		if strings.EqualFold(c.flag("scope"), "namespace") {
			var err error
			if ns, err = c.namespace(); err != nil {
				return nil, err
			}
		}
		return secrets(ctx, c, ns)
	})
}

func secrets(ctx context.Context, c *call, ns string) ([]string, error) {
	meta, err := c.f.MetadataClient()
	if err != nil {
		return nil, err
	}
	list, err := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	return out, nil
}

// Workloads completes bind's --to KIND/NAME: the kinds a Secret can be projected into,
// then, once a kind and a slash are typed, the names of the workloads of that kind in
// the command's namespace (listed as metadata only).
func Workloads(f *cmdutil.Factory) cobra.CompletionFunc {
	names := run(f, func(ctx context.Context, c *call) ([]string, error) {
		kind, _, _ := strings.Cut(c.toComplete, "/")
		ns, err := c.namespace()
		if err != nil {
			return nil, err
		}
		gvr, ok := projection.WorkloadResource(kind)
		if !ok {
			return nil, nil
		}
		meta, err := c.f.MetadataClient()
		if err != nil {
			return nil, err
		}
		list, err := meta.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, w := range list.Items {
			out = append(out, kind+"/"+w.Name)
		}
		return out, nil
	})
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if strings.Contains(toComplete, "/") {
			return names(cmd, args, toComplete)
		}
		var kinds []string
		for _, k := range projection.ProjectableKinds() {
			kinds = append(kinds, strings.ToLower(k)+"/")
		}
		return matching(kinds, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// Contexts completes the names of the kubeconfig's contexts.
func Contexts(f *cmdutil.Factory) cobra.CompletionFunc {
	return kubeconfigNames(f, func(c kubeconfigView) []string { return c.contexts })
}

// Clusters completes the names of the kubeconfig's clusters.
func Clusters(f *cmdutil.Factory) cobra.CompletionFunc {
	return kubeconfigNames(f, func(c kubeconfigView) []string { return c.clusters })
}

// Users completes the names of the kubeconfig's users.
func Users(f *cmdutil.Factory) cobra.CompletionFunc {
	return kubeconfigNames(f, func(c kubeconfigView) []string { return c.users })
}

type kubeconfigView struct{ contexts, clusters, users []string }

func kubeconfigNames(f *cmdutil.Factory, pick func(kubeconfigView) []string) cobra.CompletionFunc {
	return run(f, func(context.Context, *call) ([]string, error) {
		raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, err
		}
		var v kubeconfigView
		for n := range raw.Contexts {
			v.contexts = append(v.contexts, n)
		}
		for n := range raw.Clusters {
			v.clusters = append(v.clusters, n)
		}
		for n := range raw.AuthInfos {
			v.users = append(v.users, n)
		}
		out := pick(v)
		slices.Sort(out)
		return out, nil
	})
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
