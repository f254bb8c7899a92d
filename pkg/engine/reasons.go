package engine

// Reasons of the instance and binding conditions (Ready, Failed, OrphanMitigation) and of
// status.retry. They are CamelCase words users can search for. A reason's prefix names the
// action it belongs to (Provision, Update, Deprovision, OrphanMitigation, Bind, Unbind): a retry
// scheduled for one action never delays another (a deletion is not held back by the
// backoff of a failed provision).
const (
	// ReasonProvisionPending: recorded, nothing sent to the broker yet.
	ReasonProvisionPending = "ProvisionPending"
	// ReasonProvisionRequestInFlight: the provision request is being sent (or was sent
	// by a command that was interrupted, and will be re-sent identically).
	ReasonProvisionRequestInFlight = "ProvisionRequestInFlight"
	// ReasonProvisionInProgress: the broker accepted an asynchronous provision.
	ReasonProvisionInProgress = "ProvisionInProgress"
	// ReasonProvisioned: the broker holds the instance as asked.
	ReasonProvisioned = "Provisioned"
	// ReasonAdopted: the broker holds the instance or binding, whose record was taken
	// over from another platform ("kubectl catalog migrate svcat").
	ReasonAdopted = "Adopted"
	// ReasonProvisionCallFailed: the provision call failed; it is retried.
	ReasonProvisionCallFailed = "ProvisionCallFailed"
	// ReasonProvisionFailed: the asynchronous provision ended "failed" (or ran past its
	// maximum polling duration).
	ReasonProvisionFailed = "ProvisionFailed"
	// ReasonProvisionRejected: the broker refused the request (400, 409); it is not
	// retried until the spec changes.
	ReasonProvisionRejected = "ProvisionRejected"
	// ReasonProvisionBlockedByConcurrentOperation: 422 ConcurrencyError; retried later.
	ReasonProvisionBlockedByConcurrentOperation = "ProvisionBlockedByConcurrentOperation"
	// ReasonProvisionMaintenanceInfoConflict: 422 MaintenanceInfoConflict.
	ReasonProvisionMaintenanceInfoConflict = "ProvisionMaintenanceInfoConflict"

	ReasonUpdateRequestInFlight                   = "UpdateRequestInFlight"
	ReasonUpdateInProgress                        = "UpdateInProgress"
	ReasonUpdated                                 = "Updated"
	ReasonUpdateCallFailed                        = "UpdateCallFailed"
	ReasonUpdateFailed                            = "UpdateFailed"
	ReasonUpdateRejected                          = "UpdateRejected"
	ReasonUpdateNotRepeatable                     = "UpdateNotRepeatable"
	ReasonUpdateBlockedByConcurrentOperation      = "UpdateBlockedByConcurrentOperation"
	ReasonUpdateMaintenanceInfoConflict           = "UpdateMaintenanceInfoConflict"
	ReasonUpdateRequested                         = "UpdateRequested"
	ReasonDeprovisionRequestInFlight              = "DeprovisionRequestInFlight"
	ReasonDeprovisionInProgress                   = "DeprovisionInProgress"
	ReasonDeprovisionCallFailed                   = "DeprovisionCallFailed"
	ReasonDeprovisionFailed                       = "DeprovisionFailed"
	ReasonDeprovisionBlockedByConcurrentOperation = "DeprovisionBlockedByConcurrentOperation"
	// ReasonDeprovisionBlockedByExistingBindings: the instance still has bindings; they
	// were marked for deletion and the deprovision waits for them.
	ReasonDeprovisionBlockedByExistingBindings = "DeprovisionBlockedByExistingBindings"

	// ReasonOrphanMitigationInProgress: the outcome of a provision is uncertain, so the
	// engine deletes what the broker may hold before trying again.
	ReasonOrphanMitigationInProgress = "OrphanMitigationInProgress"
	ReasonOrphanMitigationCallFailed = "OrphanMitigationCallFailed"
	ReasonOrphanMitigationFailed     = "OrphanMitigationFailed"
	ReasonOrphanMitigationSucceeded  = "OrphanMitigationSucceeded"

	// Bindings.
	// ReasonBindRequestInFlight: the bind request is being sent (or will be re-sent).
	ReasonBindRequestInFlight = "BindRequestInFlight"
	// ReasonBindInProgress: the broker accepted an asynchronous bind.
	ReasonBindInProgress = "BindInProgress"
	// ReasonBound: the broker holds the binding and its credentials are in the Secret.
	ReasonBound = "Bound"
	// ReasonBindCallFailed: the bind call failed; it is retried.
	ReasonBindCallFailed = "BindCallFailed"
	// ReasonBindFailed: the asynchronous bind ended "failed" (or ran past its maximum
	// polling duration), or its binding could not be fetched.
	ReasonBindFailed = "BindFailed"
	// ReasonBindRejected: the broker refused the bind (400, 409), or the plan is not
	// bindable; it is not retried until the spec changes.
	ReasonBindRejected = "BindRejected"
	// ReasonBindBlockedByConcurrentOperation: 422 ConcurrencyError; retried later.
	ReasonBindBlockedByConcurrentOperation = "BindBlockedByConcurrentOperation"
	// ReasonBindWaitingForInstance: the instance is not ready (still provisioning,
	// failed, being deleted, or unusable); the bind waits for it.
	ReasonBindWaitingForInstance = "BindWaitingForInstance"
	// ReasonBindSecretFailed: the credentials could not be written to the Secret (a
	// transform failed, or the Secret belongs to something else).
	ReasonBindSecretFailed = "BindSecretFailed"
	// ReasonSecretTemplateFailed: the binding's secret template failed (which key, and
	// why, without any value); the Secret is left as it was, and a rotation goes back
	// to the credentials it had.
	ReasonSecretTemplateFailed = "BindSecretTemplateFailed"
	// ReasonBindCredentialsLost: a re-sent bind got no credentials (the broker gives them
	// once, to the interrupted command): the binding is unbound and bound again under a
	// new id.
	ReasonBindCredentialsLost = "BindCredentialsLost"
	// ReasonBindProjectionFailed: the Secret could not be projected into a workload.
	ReasonBindProjectionFailed = "BindProjectionFailed"

	ReasonUnbindRequestInFlight              = "UnbindRequestInFlight"
	ReasonUnbindInProgress                   = "UnbindInProgress"
	ReasonUnbindCallFailed                   = "UnbindCallFailed"
	ReasonUnbindFailed                       = "UnbindFailed"
	ReasonUnbindBlockedByConcurrentOperation = "UnbindBlockedByConcurrentOperation"
	// ReasonUnbindCleanupFailed: the Secret or a workload projection could not be
	// removed before the unbind.
	ReasonUnbindCleanupFailed = "UnbindCleanupFailed"

	// Failures before any broker call: the broker record, its credentials, the class or
	// a parameters Secret could not be read. They apply to whatever action is due.
	ReasonBrokerUnavailable = "BrokerUnavailable"
	// ReasonWaitingForReconcile: the user may not read a cluster broker's credentials;
	// reconcile makes the call.
	ReasonWaitingForReconcile   = "WaitingForReconcile"
	ReasonParametersUnavailable = "ParametersUnavailable"
	ReasonPlatformUnavailable   = "PlatformUnavailable"
)

// actionOf returns the action a reason belongs to ("" for the generic ones).
func actionOf(reason string) string {
	for _, p := range []string{actionProvision, actionUpdate, actionDeprovision, actionOrphanMitigation, actionBind, actionUnbind} {
		if len(reason) >= len(p) && reason[:len(p)] == p {
			return p
		}
	}
	return ""
}

const (
	actionProvision        = "Provision"
	actionUpdate           = "Update"
	actionDeprovision      = "Deprovision"
	actionOrphanMitigation = "OrphanMitigation"
	actionBind             = "Bind"
	actionUnbind           = "Unbind"
)
