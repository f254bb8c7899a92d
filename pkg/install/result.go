package install

import "k8s.io/apimachinery/pkg/runtime"

// Actions reported for an object, as kubectl words them.
const (
	Created    = "created"
	Configured = "configured"
	Unchanged  = "unchanged"
	Deleted    = "deleted"
	// Pruned is a workload of the installation that it no longer has (fewer
	// shards, a CronJob replaced by a Deployment, one replica where there
	// were several), deleted by the install.
	Pruned   = "pruned"
	NotFound = "not found, skipped"
	// Renewed is the token ConfigMap deleted and created with a new token.
	Renewed = "created anew (new token)"
)

// Result is what happened to one object.
type Result struct {
	// Resource is the object's resource as kubectl names it in its output,
	// such as "serviceaccount" or "cronjob.batch".
	Resource string
	Name     string
	// Action is Created, Configured, Unchanged, Deleted or NotFound.
	Action string
	// Object is the object as the API server returned it (nil after a
	// delete).
	Object runtime.Object
	// Replaced is, for the token ConfigMap created anew (Renewed), the token it
	// replaced: the records stamped with it lose their verified author.
	Replaced string
	// Before is the object as it was before an apply changed it (nil when it was
	// created, or not applied).
	Before runtime.Object
}

// String is the kubectl-style line: "serviceaccount/catalog-reconcile created".
func (r Result) String() string { return r.Resource + "/" + r.Name + " " + r.Action }
