// Package kube connects the engine (pkg/engine) to a real cluster: workloads changed
// through pkg/projection, the state of the trust policy read through pkg/trust, Events
// written through the API server (APIEventSink), and the platform (Platform: the cluster
// id, namespaces' uids and the user). cmdutil.Factory.Engine wires them in.
package kube
