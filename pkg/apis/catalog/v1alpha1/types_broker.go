package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Broker is a registered OSB broker.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Broker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BrokerSpec   `json:"spec"`
	Status BrokerStatus `json:"status,omitempty"`
}

// BrokerSpec is how to reach a broker and which of its catalog to offer.
type BrokerSpec struct {
	// URL is the broker's base URL.
	URL string `json:"url"`
	// Scope is where the broker and its classes live.
	Scope Scope `json:"scope"`
	// Auth references the Secret holding the broker's credentials. The credentials
	// themselves never go into the record.
	Auth *BrokerAuth `json:"auth,omitempty"`
	// CABundle is PEM-encoded CA certificates to trust for the broker's TLS certificate.
	CABundle string `json:"caBundle,omitempty"`
	// InsecureSkipTLSVerify disables verification of the broker's TLS certificate.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// RelistInterval is how often the catalog is fetched again. Unset or zero: only on
	// request ("kubectl catalog sync broker").
	RelistInterval *metav1.Duration `json:"relistInterval,omitempty"`
	// RelistRequests is increased to ask for a relist now; any change of the spec does.
	RelistRequests int64 `json:"relistRequests,omitempty"`
	// CatalogRestrictions limit the classes and plans offered from this broker.
	CatalogRestrictions *CatalogRestrictions `json:"catalogRestrictions,omitempty"`
}

// AuthType is how a broker authenticates the platform.
type AuthType string

// Broker authentication types.
const (
	// AuthBasic: the Secret has "username" and "password" keys.
	AuthBasic AuthType = "Basic"
	// AuthBearer: the Secret has a "token" key.
	AuthBearer AuthType = "Bearer"
)

// BrokerAuth references a broker's credentials.
type BrokerAuth struct {
	Type      AuthType        `json:"type"`
	SecretRef SecretReference `json:"secretRef"`
}

// CatalogRestrictions are rules, such as "name in (small, medium)" or "spec.free==true",
// that classes and plans must match to be offered.
type CatalogRestrictions struct {
	ServiceClass []string `json:"serviceClass,omitempty"`
	ServicePlan  []string `json:"servicePlan,omitempty"`
}

// BrokerStatus is what the last catalog fetches found.
type BrokerStatus struct {
	// Conditions: Ready (the catalog was fetched and stored), Failed.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the spec the last fetch used.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastCatalogFetch is when the catalog was last fetched and stored successfully.
	LastCatalogFetch *metav1.Time `json:"lastCatalogFetch,omitempty"`
	// LastCatalogError is the error of the last fetch; empty if it succeeded.
	LastCatalogError string `json:"lastCatalogError,omitempty"`
	// ClassCount and PlanCount are what the last successful fetch offered.
	ClassCount int32 `json:"classCount,omitempty"`
	PlanCount  int32 `json:"planCount,omitempty"`
	// NextRelistAt is when the catalog is due to be fetched again.
	NextRelistAt *metav1.Time `json:"nextRelistAt,omitempty"`
	// Retry is set while a failed fetch is to be retried.
	Retry *RetryState `json:"retry,omitempty"`
}

// BrokerList is a list of brokers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BrokerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Broker `json:"items"`
}
