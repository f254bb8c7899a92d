package describe

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// DescribeConsumers renders who consumes an instance: the namespaces it is shared with,
// its limits, and its bindings by namespace (own, the instance's bindings in its own
// namespace; others, those of other namespaces the reader could list; unseen, the
// namespaces whose bindings could not be listed). Nothing when the instance is neither
// shared nor limited and only its own namespace binds it.
func DescribeConsumers(i *v1alpha1.ServiceInstance, own []string, others []*v1alpha1.ServiceBinding, unseen []string) string {
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
		kv("Max bindings", fmt.Sprintf("%d (%d taken)", *s.MaxBindings, len(i.Status.Consumers)))
	} else {
		kv("Max bindings", "no limit")
	}
	byNS := map[string][]string{}
	if len(own) > 0 {
		byNS[i.Namespace] = append([]string(nil), own...)
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

func noneWord(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
