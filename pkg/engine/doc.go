// Package catalog is kubectl-catalog's engine: one step function per record kind, shared by
// the verbs (provision, update, deprovision, ...) and by reconcile.
//
// A verb records the user's intent in the store and then calls Engine.StepInstance (or
// Engine.DriveInstance, which loops over it) until the record settles; reconcile calls the
// same function on every record that has pending work. StepInstance looks at what the user
// wants (spec), what the broker is known to hold (status.provisioned) and the call in
// flight (status.inFlight), makes at most one broker call, persists the outcome and says
// when it wants to be called again. The protocol it keeps (write-ahead before every broker
// call, OSB ids generated once, claims, orphan mitigation per the OSB specification) is
// described in docs/engine.md.
package engine
