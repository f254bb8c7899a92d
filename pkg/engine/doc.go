// Package engine is kubectl-catalog's engine: one step function per record kind, shared by
// the verbs (provision, update, deprovision, ...) and by reconcile.
//
// A verb makes one call, the operation of its name (Engine.Provision, Engine.Bind, ...,
// op_*.go), which records the user's intent in the store and drives the record with
// Engine.StepInstance (or StepBinding) until it settles or must wait; reconcile calls the
// same step on every record that has pending work. StepInstance looks at what the user
// wants (spec), what the broker is known to hold (status.provisioned) and the call in
// flight (status.inFlight), makes at most one broker call, persists the outcome and says
// when it wants to be called again. The protocol it keeps (write-ahead before every broker
// call, OSB ids generated once, claims, orphan mitigation per the OSB specification) is
// described in docs/engine.md.
package engine
