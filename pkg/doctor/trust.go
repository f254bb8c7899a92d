package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// Trust reports whether the records' trust policy is in force: the
// ValidatingAdmissionPolicy and its binding, and a token ConfigMap in the catalog
// namespace younger than both.
func Trust(ctx context.Context, c *Config) []Finding {
	const name = "trust"
	st, err := trust.CheckPolicy(ctx, c.Core, c.CatalogNamespace)
	switch {
	case err != nil:
		return []Finding{{Object: name, Severity: Warn, Detail: fmt.Sprintf("cannot tell whether the records' trust policy is in force: %v", err),
			Fix: fmt.Sprintf("kubectl get validatingadmissionpolicy,validatingadmissionpolicybinding %s; kubectl get configmap %s -n %s", store.TrustPolicyName, store.TrustConfigMap, c.CatalogNamespace)}}
	case st.InForce():
		detail := fmt.Sprintf("in force: ValidatingAdmissionPolicy %s and its binding, token ConfigMap %s/%s", store.TrustPolicyName, c.CatalogNamespace, store.TrustConfigMap)
		if st.TokenOnly {
			detail = fmt.Sprintf("in force as far as the token ConfigMap %s/%s tells (you may not read the policy or its binding)", c.CatalogNamespace, store.TrustConfigMap)
		}
		fs := []Finding{{Object: name, Severity: OK, Detail: detail}}
		if st.Older != "" {
			fs = append(fs, Finding{Object: name, Severity: Warn, Detail: st.Older,
				Fix: "kubectl catalog init (upgrades the policy in place; the token stays, so no record is stranded)"})
		}
		return append(fs, unverified(ctx, c, st.Token)...)
	}
	return []Finding{{Object: name, Severity: Warn, Detail: "not in force: " + st.Reason + "; every record has an unverified author, and reconcile refuses what needs its author's authority",
		Fix: "kubectl catalog init (installs the policy and writes a new token, as \"kubectl catalog reconcile install\" also does; needs the ValidatingAdmissionPolicy API, Kubernetes 1.30+); records written before then are adopted by their owner with \"kubectl catalog adopt -n NAMESPACE\""}}
}

// unverified lists the namespaces (all those the user may list, or the current one)
// that hold records not stamped with token, the trust policy's token in force: their
// author cannot be verified, and reconcile refuses what needs it until their owner
// adopts them.
func unverified(ctx context.Context, c *Config, token string) []Finding {
	if c.Records == nil {
		return nil
	}
	counts, err := c.Records.UnverifiedCounts(ctx, "", token)
	if records.IsForbidden(err) || apierrors.IsForbidden(err) {
		counts, err = c.Records.UnverifiedCounts(ctx, c.Namespace, token)
	}
	if err != nil {
		return []Finding{{Object: "records", Severity: Warn, Detail: fmt.Sprintf("cannot tell which records were written before the trust policy: %v", err),
			Fix: "ask for list permission on ConfigMaps"}}
	}
	spaces := slices.Sorted(maps.Keys(counts))
	var fs []Finding
	for _, ns := range spaces {
		fs = append(fs, Finding{Object: "namespace " + ns, Severity: Warn,
			Detail: fmt.Sprintf("%s written before the trust policy now in force (or under a token since created anew): no one vouches for their author, so reconcile refuses what needs their author's authority, and a user's own verbs that need it are refused",
				plural(counts[ns], "record", "records")),
			Fix: "kubectl catalog adopt -n " + ns + " (by their owner, or an administrator; each record is checked against the rights of whoever runs it, who becomes its author: the Secrets it names then go where it says on her authority, which adopt lists and asks about first)"})
	}
	return fs
}
