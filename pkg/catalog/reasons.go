package catalog

// Reasons of the instance conditions (Ready, Failed, OrphanMitigation) and of
// status.retry. They are CamelCase words users can search for. A reason's prefix names the
// action it belongs to (Provision, Update, Deprovision, OrphanMitigation): a retry
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

	// Failures before any broker call: the broker record, its credentials, the class or
	// a parameters Secret could not be read. They apply to whatever action is due.
	ReasonBrokerUnavailable     = "BrokerUnavailable"
	ReasonParametersUnavailable = "ParametersUnavailable"
	ReasonPlatformUnavailable   = "PlatformUnavailable"
)

// actionOf returns the action a reason belongs to ("" for the generic ones).
func actionOf(reason string) string {
	for _, p := range []string{actionProvision, actionUpdate, actionDeprovision, actionOrphanMitigation} {
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
)
