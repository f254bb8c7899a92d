// Package store keeps kubectl-catalog's records (pkg/apis/catalog/v1alpha1) in ConfigMaps,
// and binding credentials in Secrets.
//
// One ConfigMap holds one record. The ConfigMap is only the envelope: the record's name,
// namespace, uid, resourceVersion, timestamps, labels, annotations, finalizers, owner
// references and deletionTimestamp are the ConfigMap's. The record's apiVersion, kind, spec
// and status are JSON under the data key "record" (DataKey), indented so that "kubectl get
// cm -o yaml" stays readable, and the annotation AnnotationFormat says which format wrote
// it. Decoding refuses a format newer than FormatVersion with an error that says to
// upgrade.
//
// ConfigMap names are the record name prefixed per kind (see ConfigMapName), so an
// instance "db" and a binding "db" can live in one namespace.
//
// What the store derives on every write, so it can never disagree with the record:
//   - the labels users filter by (LabelKind, LabelBroker, LabelClass, LabelPlan,
//     LabelInstance, LabelScope) and LabelManagedBy, from the record's spec;
//   - LabelPending, present exactly while the record's HasPendingWork is true;
//   - the record's generation (metadata.generation, kept in AnnotationGeneration), which
//     grows by one on every write that changes the spec (AnnotationSpecHash), so that
//     status.observedGeneration can say whether the engine has acted on the spec.
//
// Create adds Finalizer to instances and bindings, so that deleting them (by the CLI, a
// plain "kubectl delete cm" or a namespace deletion) only sets deletionTimestamp until the
// engine has released them at the broker and removes the finalizer. It adds it to
// namespace-scoped brokers too (HoldsInstances), which keep it, and their credentials
// Secret keeps BrokerSecretFinalizer, until no instance of theirs is left (ReleaseBroker).
//
// All writes are guarded by resourceVersion. Update surfaces a conflict; UpdateWithRetry
// re-reads and re-applies a mutation, for changes that are safe to re-apply on a newer
// version. Claims (leases) on records are an annotation written the same way: see Claim.
//
// Errors are *Error values naming the record and what the user can do next; test them
// with IsNotFound, IsAlreadyExists, IsConflict, IsForbidden, IsClaimed, and so on. They
// wrap the API server's error, so k8s.io/apimachinery/pkg/api/errors predicates work too.
//
// The store uses the typed clientset for ConfigMaps and Secrets (protobuf on the wire when
// the client config asks for it) and the metadata client for ListPending.
package store
