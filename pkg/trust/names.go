package trust

import "github.com/kubectl-catalog/kubectl-catalog/pkg/store"

// The names of the trust policy's objects, for those who name them to the
// user without reading or writing records.
const (
	// PolicyName names both the ValidatingAdmissionPolicy and its binding.
	PolicyName = store.TrustPolicyName
	// ConfigMapName is the ConfigMap, in the catalog namespace, holding the
	// current trust token.
	ConfigMapName = store.TrustConfigMap
)
