package doctor

import (
	"context"
	"fmt"

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
		return []Finding{{Object: name, Severity: OK, Detail: detail}}
	}
	return []Finding{{Object: name, Severity: Warn, Detail: "not in force: " + st.Reason + "; every record has an unverified author, and reconcile refuses what needs its author's authority",
		Fix: "kubectl catalog init (installs the policy and writes a new token, as \"kubectl catalog reconcile install\" also does; needs the ValidatingAdmissionPolicy API, Kubernetes 1.30+); records written before then are adopted by their owner with \"kubectl catalog adopt -n NAMESPACE\""}}
}
