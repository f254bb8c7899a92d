package store

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Reason classifies an *Error.
type Reason string

// Reasons of store errors.
const (
	// ReasonNotFound: the record or Secret does not exist.
	ReasonNotFound Reason = "NotFound"
	// ReasonAlreadyExists: a record or Secret of that name exists.
	ReasonAlreadyExists Reason = "AlreadyExists"
	// ReasonConflict: the record changed since it was read (resourceVersion).
	ReasonConflict Reason = "Conflict"
	// ReasonForbidden: RBAC does not allow the request.
	ReasonForbidden Reason = "Forbidden"
	// ReasonInvalid: the name or the object was refused as invalid.
	ReasonInvalid Reason = "Invalid"
	// ReasonTooLarge: the encoded record does not fit in a ConfigMap.
	ReasonTooLarge Reason = "TooLarge"
	// ReasonClaimed: someone else holds a live claim on the record, or changed it while
	// it was being claimed.
	ReasonClaimed Reason = "Claimed"
	// ReasonCorrupt: the ConfigMap does not hold a readable record.
	ReasonCorrupt Reason = "Corrupt"
	// ReasonUnsupportedFormat: the record was written by a newer release.
	ReasonUnsupportedFormat Reason = "UnsupportedFormat"
	// ReasonNotOwned: a Secret of that name exists and does not belong to the binding
	// (or to the record whose call it would keep).
	ReasonNotOwned Reason = "NotOwned"
	// ReasonOther: any other failure of the request; Err says what.
	ReasonOther Reason = "Other"
)

// Error is the error of every store operation. Its message names the object and says what
// the user can do next.
type Error struct {
	Reason Reason
	// Op is what was being done: get, list, create, update, delete, claim, write, decode.
	Op string
	// Kind is the record kind (v1alpha1.KindServiceInstance, ...) or "Secret".
	Kind string
	// Namespace and Name name the record (or Secret); Namespace is "" for a list across
	// all namespaces.
	Namespace, Name string
	// Holder and Expires describe the live claim, for ReasonClaimed when known.
	Holder  string
	Expires time.Time
	// Detail adds what was wrong, for ReasonInvalid, ReasonTooLarge, ReasonCorrupt,
	// ReasonUnsupportedFormat, ReasonNotOwned.
	Detail string
	// Err is the underlying error (often an API status error), if any.
	Err error

	// Finalized says the ConfigMap at fault, found by a List, carries the engine's
	// finalizer (Finalizer): a release that reads it may still hold something of it at
	// a broker.
	Finalized bool

	// configMap is the name of the ConfigMap at fault, for ReasonCorrupt.
	configMap string
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ConfigMap is the name of the ConfigMap holding the record (or Secret) at fault: for a
// ConfigMap that does not hold a readable record, the ConfigMap's own name.
func (e *Error) ConfigMap() string {
	if e.configMap != "" {
		return e.configMap
	}
	return objectName(e.Kind, e.Name)
}

// Error says what failed, for which object, and what to do next.
func (e *Error) Error() string {
	w := wordsFor(e.Kind)
	what := fmt.Sprintf("%s %q", w.noun, e.Name)
	in, nsFlag := "", ""
	if e.Namespace != "" {
		in = fmt.Sprintf(" in namespace %q", e.Namespace)
		nsFlag = " -n " + e.Namespace
	}
	cause := ""
	if e.Err != nil {
		cause = ": " + e.Err.Error()
	}
	switch e.Reason {
	case ReasonNotFound:
		switch e.Kind {
		case kindSecret:
			return fmt.Sprintf("%s not found%s: check the name, or create the Secret", what, in)
		case v1alpha1.KindServicePlanSchemas:
			return fmt.Sprintf("%s not found%s: fetch the catalog again with \"kubectl catalog sync broker BROKER%s\"", what, in, nsFlag)
		}
		return fmt.Sprintf("%s not found%s: list them with \"kubectl catalog get %s%s\"", what, in, w.many, nsFlag)
	case ReasonAlreadyExists:
		if e.Kind == kindSecret {
			return fmt.Sprintf("%s already exists%s: choose another name, or see it with \"kubectl get secret %s%s\"", what, in, e.Name, nsFlag)
		}
		return fmt.Sprintf("%s already exists%s: choose another name, or see it with \"kubectl catalog describe %s %s%s\"",
			what, in, w.one, e.Name, nsFlag)
	case ReasonConflict:
		return fmt.Sprintf("%s%s was changed by someone else since it was read: read it again and retry", what, in)
	case ReasonForbidden:
		if e.Name == "" && e.Namespace == "" {
			return fmt.Sprintf("not allowed to %s %s in all namespaces: ask your cluster administrator for permission to %s %s cluster-wide, or name one namespace with -n%s",
				e.Op, w.many, verbOf(e.Op), resourceOf(e.Kind), cause)
		}
		target := what
		if e.Name == "" {
			target = w.many
		}
		return fmt.Sprintf("not allowed to %s %s%s: ask your cluster administrator for permission to %s %s%s%s",
			e.Op, target, in, verbOf(e.Op), resourceOf(e.Kind), in, cause)
	case ReasonInvalid:
		if e.Name == "" {
			return fmt.Sprintf("cannot %s %s%s: %s%s", e.Op, w.noun, in, e.Detail, cause)
		}
		return fmt.Sprintf("cannot %s %s%s: %s%s", e.Op, what, in, e.Detail, cause)
	case ReasonTooLarge:
		return fmt.Sprintf("%s%s is too large to store (%s): a ConfigMap holds at most 1 MiB, even compressed", what, in, e.Detail)
	case ReasonClaimed:
		if e.Holder != "" {
			return fmt.Sprintf("%s%s is being worked on by %q until %s: wait and retry, or let \"kubectl catalog reconcile\" finish it",
				what, in, e.Holder, e.Expires.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("%s%s changed while claiming it: someone else is working on it; read it again%s", what, in, cause)
	case ReasonCorrupt:
		cm := e.configMap
		if cm == "" {
			cm = objectName(e.Kind, e.Name)
		}
		return fmt.Sprintf("ConfigMap %q%s does not hold a readable %s: %s (fix or delete the ConfigMap)",
			cm, in, w.noun, e.Detail)
	case ReasonUnsupportedFormat:
		return fmt.Sprintf("%s%s was written by a newer kubectl-catalog (%s): upgrade kubectl-catalog to read it", what, in, e.Detail)
	case ReasonNotOwned:
		if e.Op == "read" {
			return fmt.Sprintf("%s%s does not belong to %s, so it is not read for it", what, in, e.Detail)
		}
		return fmt.Sprintf("%s%s already exists and does not belong to %s: choose another secret name, or delete that Secret",
			what, in, e.Detail)
	}
	if e.Name == "" {
		return fmt.Sprintf("cannot %s %s%s%s", e.Op, w.many, in, cause)
	}
	return fmt.Sprintf("cannot %s %s%s%s", e.Op, what, in, cause)
}

const kindSecret = "Secret"

// words are what a user reads for a kind: a noun, and the singular and plural the CLI's
// verbs take.
type words struct{ noun, one, many string }

func wordsFor(kind string) words {
	switch kind {
	case v1alpha1.KindBroker:
		return words{"broker", "broker", "brokers"}
	case v1alpha1.KindServiceClass:
		return words{"service class", "class", "classes"}
	case v1alpha1.KindServicePlanSchemas:
		return words{"plan schemas of class", "class", "classes"}
	case v1alpha1.KindServiceInstance:
		return words{"service instance", "instance", "instances"}
	case v1alpha1.KindServiceBinding:
		return words{"service binding", "binding", "bindings"}
	case kindSecret:
		return words{"Secret", "secret", "secrets"}
	case "":
		return words{"record", "record", "records"}
	}
	return words{kind, kind, kind}
}

func resourceOf(kind string) string {
	if kind == kindSecret {
		return "secrets"
	}
	return "configmaps"
}

// objectName is the name of the Kubernetes object holding the record (or Secret).
func objectName(kind, name string) string {
	if n := ConfigMapName(kind, name); n != "" {
		return n
	}
	return name
}

func verbOf(op string) string {
	switch op {
	case "claim", "write", "adopt":
		return "update"
	case "decode":
		return "get"
	}
	return op
}

// apiError turns an API server error into an *Error about the record (or Secret).
func apiError(op, kind, namespace, name string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	reason := ReasonOther
	switch {
	case apierrors.IsNotFound(err):
		reason = ReasonNotFound
	case apierrors.IsAlreadyExists(err):
		reason = ReasonAlreadyExists
	case apierrors.IsConflict(err):
		reason = ReasonConflict
	case apierrors.IsForbidden(err):
		reason = ReasonForbidden
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		reason = ReasonInvalid
	case apierrors.IsRequestEntityTooLargeError(err):
		reason = ReasonTooLarge
	}
	return &Error{Reason: reason, Op: op, Kind: kind, Namespace: namespace, Name: name, Err: err}
}

func hasReason(err error, r Reason) bool {
	var se *Error
	return errors.As(err, &se) && se.Reason == r
}

// IsNotFound reports whether err says the record (or Secret) does not exist.
func IsNotFound(err error) bool { return hasReason(err, ReasonNotFound) }

// IsAlreadyExists reports whether err says a record (or Secret) of that name exists.
func IsAlreadyExists(err error) bool { return hasReason(err, ReasonAlreadyExists) }

// IsConflict reports whether err says the record changed since it was read. A failed
// Claim is IsClaimed instead.
func IsConflict(err error) bool { return hasReason(err, ReasonConflict) }

// IsForbidden reports whether err says RBAC refused the request.
func IsForbidden(err error) bool { return hasReason(err, ReasonForbidden) }

// IsInvalid reports whether err says the name or object was refused as invalid.
func IsInvalid(err error) bool { return hasReason(err, ReasonInvalid) }

// IsTooLarge reports whether err says the record does not fit in a ConfigMap.
func IsTooLarge(err error) bool { return hasReason(err, ReasonTooLarge) }

// IsClaimed reports whether err says someone else is working on the record.
func IsClaimed(err error) bool { return hasReason(err, ReasonClaimed) }

// IsCorrupt reports whether err says a ConfigMap does not hold a readable record.
func IsCorrupt(err error) bool { return hasReason(err, ReasonCorrupt) }

// IsUnsupportedFormat reports whether err says a record was written by a newer release.
func IsUnsupportedFormat(err error) bool { return hasReason(err, ReasonUnsupportedFormat) }

// IsNotOwned reports whether err says a Secret exists that the binding does not own.
func IsNotOwned(err error) bool { return hasReason(err, ReasonNotOwned) }
