package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KindCatalogAccess is the kind of the catalog's access rules.
const KindCatalogAccess = "CatalogAccess"

// CatalogAccessName is the name of the one CatalogAccess record, kept in the catalog
// namespace. One record for every rule keeps the marketplace at a single GET for access,
// however many namespaces there are; rules are few (an operator writes them by hand), so
// the record stays far below the ConfigMap size limit.
const CatalogAccessName = "default"

// CatalogAccess holds the rules saying which classes and plans each namespace may see and
// provision. Everything is visible unless a rule disables it.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CatalogAccess struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CatalogAccessSpec `json:"spec"`
}

// CatalogAccessSpec is the list of access rules.
type CatalogAccessSpec struct {
	// Rules, at most one per (namespace, broker, class, plan). The most specific rule
	// decides: a namespace's rule over an every-namespace rule, a plan's rule over its
	// class's rule.
	Rules []AccessRule `json:"rules,omitempty"`
}

// AccessRule enables or disables a class, or one plan of it, in one namespace or in all.
// Classes and plans are identified by their OSB ids; the external names are kept for
// display only, so a renamed class keeps its rules.
type AccessRule struct {
	// Namespace the rule applies to; empty for every namespace.
	Namespace string `json:"namespace,omitempty"`
	// BrokerName is the name of the broker record offering the class.
	BrokerName string `json:"brokerName"`
	// ClassID is the OSB service id.
	ClassID           string `json:"classID"`
	ClassExternalName string `json:"classExternalName,omitempty"`
	// PlanID is the OSB plan id; empty for the whole class.
	PlanID           string `json:"planID,omitempty"`
	PlanExternalName string `json:"planExternalName,omitempty"`
	// Enabled says whether the class or plan may be seen and provisioned.
	Enabled bool `json:"enabled"`
}

// CatalogAccessList is a list of access records.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CatalogAccessList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CatalogAccess `json:"items"`
}

// HasPendingWork is always false: access rules are applied when read.
func (in *CatalogAccess) HasPendingWork() bool { return false }
