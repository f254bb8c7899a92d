package describe

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// DescribeConsumers renders who consumes an instance: the namespaces it is shared with,
// its limits with the places taken (every binding that exists counts, those made
// before the limit was set too: engine.PlacesTaken), and its bindings by namespace (own,
// the instance's bindings in its own namespace; others, those of other namespaces the
// reader could list; unseen, the namespaces whose bindings could not be listed).
// Nothing when the instance is neither shared nor limited and only its own namespace
// binds it.
func DescribeConsumers(i *v1alpha1.ServiceInstance, own, others []*v1alpha1.ServiceBinding, unseen []string) string {
	s := i.Spec
	if len(s.SharedWith) == 0 && s.MaxBindings == nil && len(s.AllowedNamespaces) == 0 && len(others) == 0 && len(i.Status.Consumers) == 0 {
		return ""
	}
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "  %-18s%s\n", k+":", v) }
	b.WriteString("Consumers:\n")
	kv("Shared with", noneWord(strings.Join(s.SharedWith, ", ")))
	if len(s.AllowedNamespaces) > 0 {
		kv("Allowed", strings.Join(s.AllowedNamespaces, ", "))
	} else {
		kv("Allowed", "its own namespace and every namespace it is shared with")
	}
	if s.MaxBindings != nil {
		kv("Max bindings", maxBindings(i, slices.Concat(own, others), unseen))
	} else {
		kv("Max bindings", "no limit")
	}
	byNS := map[string][]string{}
	for _, x := range own {
		byNS[i.Namespace] = append(byNS[i.Namespace], x.Name)
	}
	for _, x := range others {
		byNS[x.Namespace] = append(byNS[x.Namespace], x.Name)
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	if len(namespaces) == 0 {
		kv("Bindings", "none")
	} else {
		b.WriteString("  Bindings:\n")
		for _, ns := range namespaces {
			names := byNS[ns]
			sort.Strings(names)
			fmt.Fprintf(&b, "    %s: %s\n", ns, strings.Join(names, ", "))
		}
	}
	if len(unseen) > 0 {
		kv("Not listed", strings.Join(unseen, ", ")+" (you may not list the bindings there)")
	}
	return b.String()
}

// maxBindings is the limit of i and the places taken by the bindings listed, saying
// when no place is left and when the bindings exceed a limit lowered after them.
func maxBindings(i *v1alpha1.ServiceInstance, listed []*v1alpha1.ServiceBinding, unseen []string) string {
	limit := int(*i.Spec.MaxBindings)
	taken := len(engine.PlacesTaken(i, listed, unseen))
	atLeast := ""
	if len(engine.Uncounted(i, unseen)) > 0 {
		atLeast = "at least "
	}
	s := fmt.Sprintf("%d (%s%d taken)", limit, atLeast, taken)
	switch {
	case taken > limit:
		s += fmt.Sprintf(": more bindings than the limit, which was lowered after them; they stay, and new binds are refused until fewer than %d remain", limit)
	case taken == limit:
		s += ": new binds are refused"
	}
	return s
}

func noneWord(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
