// Package v1alpha1 holds the record types of kubectl-catalog: Broker, ServiceClass (with its
// plans), ServicePlanSchemas, ServiceInstance and ServiceBinding.
//
// Records are Kubernetes-style objects (TypeMeta, ObjectMeta, Spec, Status) so that
// cli-runtime printers work on them, but they are not served by any API server: pkg/store
// keeps each record in a ConfigMap. The ConfigMap provides the metadata (name, namespace,
// uid, resourceVersion, labels, finalizers, deletionTimestamp); the record's apiVersion,
// kind, spec and status are serialised in its data. OSB identifiers and values are carried
// as plain strings and raw JSON so that this package does not depend on the OSB client.
//
// The DeepCopy methods in zz_generated.deepcopy.go are generated; after changing a type, run
//
//	go generate ./pkg/apis/...
//
// +k8s:deepcopy-gen=package
// +groupName=catalog.kubectl-catalog.io
package v1alpha1

//go:generate go run k8s.io/code-generator/cmd/deepcopy-gen@v0.37.2 --go-header-file /dev/null --output-file zz_generated.deepcopy.go .
