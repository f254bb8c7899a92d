// Package kube connects the engine (pkg/engine) to a real cluster: workloads changed
// through pkg/projection, the state of the trust policy read through pkg/trust, and
// Events written through the API server. cmdutil.Factory.Engine wires them in.
package kube
