package store

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Prefix is the prefix of every label, annotation and finalizer key kubectl-catalog owns:
// the records' API group and a slash.
const Prefix = v1alpha1.GroupName + "/"

// Labels on record ConfigMaps (and, for LabelManagedBy, LabelBinding and LabelInstance, on
// credentials Secrets). Values of LabelBroker, LabelClass, LabelPlan, LabelInstance and
// LabelBinding go through LabelValue.
const (
	// LabelKind is the record's kind (v1alpha1.KindServiceInstance, ...), on every record.
	LabelKind = Prefix + "kind"
	// LabelBroker is the broker's record name, on brokers, classes, plan schemas and
	// instances.
	LabelBroker = Prefix + "broker"
	// LabelClass is the class's external (OSB) name, on classes and instances.
	LabelClass = Prefix + "class"
	// LabelPlan is the plan's external (OSB) name, on instances.
	LabelPlan = Prefix + "plan"
	// LabelInstance is the instance's record name, on bindings and credentials Secrets.
	LabelInstance = Prefix + "instance"
	// LabelInstanceNamespace is the instance's namespace, on bindings of an instance
	// shared from another namespace (absent on the others).
	LabelInstanceNamespace = Prefix + "instance-namespace"
	// LabelBinding is the binding's record name, on credentials Secrets.
	LabelBinding = Prefix + "binding"
	// LabelScope is the broker's scope (Cluster or Namespace), on brokers, classes, plan
	// schemas and instances.
	LabelScope = Prefix + "scope"
	// LabelPending is "true" on every record with unfinished work, absent otherwise.
	LabelPending = Prefix + "pending"
	// LabelRequest ("true") marks a Secret that keeps what a call sent
	// (WriteRequestSecret): the only Secrets of a record the engine reads back as
	// parameters to re-send, or deletes once the call's outcome is stored.
	LabelRequest = Prefix + "request"
	// LabelManagedBy is the well-known managed-by label, ManagedBy on everything the
	// store writes.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "kubectl-catalog"
)

// IDLabelPrefix starts the label, one per OSB id, on every instance and binding that uses
// the id or may hold it at the broker (spec, status, in flight, retired): how the engine
// finds another record that already uses an id before it sends it to a broker. The rest
// of the key is IDLabelName(id).
const IDLabelPrefix = Prefix + "id-"

// IDLabel is the label key of OSB id id on records (IDLabelPrefix and 40 hex digits of
// the id's SHA-256), whatever characters the id has.
func IDLabel(id string) string {
	sum := sha256.Sum256([]byte(id))
	return IDLabelPrefix + hex.EncodeToString(sum[:20])
}

// Annotations on record ConfigMaps.
const (
	// AnnotationFormat is the format version of the record under DataKey.
	AnnotationFormat = Prefix + "format"
	// AnnotationGeneration is the record's generation: 1 at creation, one more on every
	// write that changes the spec.
	AnnotationGeneration = Prefix + "generation"
	// AnnotationSpecHash identifies the spec last written, to detect spec changes.
	AnnotationSpecHash = Prefix + "spec-hash"
	// AnnotationClaim is the claim (lease) on a record: a JSON Lease, holder and expiry.
	AnnotationClaim = Prefix + "claim"
	// AnnotationAuthor is the username of whoever last wrote the record's spec. The
	// catalog's ValidatingAdmissionPolicy makes the API server refuse a write that
	// changes the spec (DataKey) or any of the three author annotations unless
	// AnnotationAuthor is the requesting user and AnnotationAuthorGroups their groups.
	AnnotationAuthor = Prefix + "author"
	// AnnotationAuthorGroups is the author's groups as the API server saw them on that
	// write: joined with ",", or, when a group holds a ",", a list (EncodeGroups).
	AnnotationAuthorGroups = Prefix + "author-groups"
	// AnnotationTrustToken is the token of the trust policy in force when the spec was
	// written (TrustConfigMap); a record without the current token has no verified
	// author.
	AnnotationTrustToken = Prefix + "trust-token"
	// AnnotationMigratedFrom is on records "kubectl catalog migrate svcat" wrote: the
	// retired Service Catalog object they were made from, as
	// "<kind>/<namespace>/<name>/<uid>" (no namespace for cluster-scoped objects), so a
	// second run knows them as its own.
	AnnotationMigratedFrom = Prefix + "migrated-from"
	// AnnotationDeregistering is on a broker "kubectl catalog deregister" is deleting:
	// when it was marked (RFC 3339). No new provision, update or bind is sent to a
	// broker that carries it.
	AnnotationDeregistering = Prefix + "deregistering"
)

// TrustConfigMap is the ConfigMap, in the catalog namespace, whose TrustTokenKey holds a
// random token created together with the catalog's ValidatingAdmissionPolicy and its
// binding, and created anew whenever they are. Records stamped with the current token were
// written under the policy, so their author annotations are the API server's word.
const (
	TrustConfigMap = "catalog-trust"
	TrustTokenKey  = "token"
	// TrustPolicyName names both the ValidatingAdmissionPolicy and its binding.
	TrustPolicyName = "kubectl-catalog-record-author"
)

// Finalizer is on every instance and binding ConfigMap until the broker confirmed the
// delete (and the binding's Secret is gone), and on every namespace-scoped broker's
// ConfigMap until no instance of the broker is left in its namespace. Run "kubectl
// catalog reconcile" to finish what it holds back.
const Finalizer = Prefix + "broker-cleanup"

// BrokerSecretFinalizer is on the credentials Secret of a namespace-scoped broker while
// the broker's record carries Finalizer: deleting the namespace deletes its Secrets
// whatever refers to them, and the broker's instances cannot be deprovisioned without
// its credentials.
const BrokerSecretFinalizer = Prefix + "broker-credentials"

// DataKey is the ConfigMap data key holding the record (apiVersion, kind and spec).
const DataKey = "record"

// StatusDataKey is the ConfigMap data key holding the record's status (format 2). Keeping
// the status apart lets the trust policy tell a change of the spec, which must be made by
// the author, from the engine's status writes.
const StatusDataKey = "status"

// FormatVersion is the record format this release writes, and the newest it reads.
//
// Format 1: DataKey holds a JSON object {apiVersion, kind, spec, status} (indented, or
// compact when indented would not fit); apiVersion is catalog.kubectl-catalog.io/v1alpha1.
// Format 2: DataKey holds {apiVersion, kind, spec} and StatusDataKey the status, so that a
// change of the spec is a change of DataKey alone (what the trust policy checks).
// Format 3: format 2, except that DataKey holds {apiVersion, kind, specGzip}, the spec's
// compact JSON compressed with gzip (base64 in the JSON). It is written only for a record
// whose spec does not fit in a ConfigMap otherwise (a class with thousands of plans and
// their schemas); every other record is still written as format 2, which releases that
// read only up to format 2 keep reading. A compressed spec is still inside DataKey, so the
// trust policy sees its every change.
// Adding optional fields that older releases may drop does not change the format; any
// other change does, together with a decoder for the older format.
const FormatVersion = 3

// formatPlain is the format of a record whose spec is not compressed.
const formatPlain = 2

// configMapPrefixes are the per-kind ConfigMap name prefixes. Each ends with a dot and
// none contains another dot, so the record name is whatever follows the first dot.
func configMapPrefix(kind string) string {
	switch kind {
	case v1alpha1.KindBroker:
		return "catalog-broker."
	case v1alpha1.KindServiceClass:
		return "catalog-class."
	case v1alpha1.KindServicePlanSchemas:
		return "catalog-schemas."
	case v1alpha1.KindServiceInstance:
		return "catalog-instance."
	case v1alpha1.KindServiceBinding:
		return "catalog-binding."
	case v1alpha1.KindCatalogAccess:
		return "catalog-access."
	}
	return ""
}

// recordKinds are the record kinds, in the order of their ConfigMap name prefixes.
var recordKinds = []string{v1alpha1.KindBroker, v1alpha1.KindServiceClass, v1alpha1.KindServicePlanSchemas,
	v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding, v1alpha1.KindCatalogAccess}

// RecordPrefixes maps the ConfigMap name prefix of each record kind to the kind. A
// ConfigMap's name cannot change, so its prefix says for good whether it holds a record
// and of which kind (the trust policy selects records by it).
func RecordPrefixes() map[string]string {
	m := make(map[string]string, len(recordKinds))
	for _, k := range recordKinds {
		m[configMapPrefix(k)] = k
	}
	return m
}

// ConfigMapName is the name of the ConfigMap holding the record of kind kind named name,
// e.g. "catalog-instance.db" for the ServiceInstance "db". It is "" for an unknown kind.
func ConfigMapName(kind, name string) string {
	p := configMapPrefix(kind)
	if p == "" {
		return ""
	}
	return p + name
}

// LabelValue turns s into a valid label value: s itself when it is one, else "sha256-"
// and the first 56 hex digits of its SHA-256. Selectors built by the store use the same
// function, so filtering by a long or unusual name still works.
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + hex.EncodeToString(sum[:])[:56]
}
