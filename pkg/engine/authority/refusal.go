package authority

import (
	"errors"
	"fmt"
	"regexp"
)

// Reasons of refusals. They name no action: a refusal holds back whatever is due.
const (
	// ReasonRefusedUntrustedReference: the record (or its broker) refers to something
	// outside its namespace, or to a cluster-scoped broker or class outside the catalog
	// namespace.
	ReasonRefusedUntrustedReference = "RefusedUntrustedReference"
	// ReasonRefusedAuthorUnverified: what is due needs the author's authority, and the
	// record's author cannot be verified.
	ReasonRefusedAuthorUnverified = "RefusedAuthorUnverified"
	// ReasonRefusedNotAuthorized: the record's author may not read a Secret or change a
	// workload the record names.
	ReasonRefusedNotAuthorized = "RefusedNotAuthorized"
	// ReasonRefusedPlanNotAllowed: access rules, or the broker's catalog as synced, do
	// not offer the plan in the record's namespace.
	ReasonRefusedPlanNotAllowed = "RefusedPlanNotAllowed"
	// ReasonRefusedIDInUse: an older record already uses the record's OSB id.
	ReasonRefusedIDInUse = "RefusedIDInUse"
	// ReasonRefusedIDNotOwned: an OSB id the record's status names is not the record's
	// (see v1alpha1.ServiceInstance.OwnsExternalID).
	ReasonRefusedIDNotOwned = "RefusedIDNotOwned"
)

// RefusedError says why the engine will not act on a record.
type RefusedError struct {
	Reason  string
	Message string
	// Transient: the refusal comes of a request that failed (the trust policy, or the
	// API server's answer about the author, could not be read) and may go through when
	// tried again. Any other refusal stays until a person changes something: a spec, a
	// grant, a role, the trust policy, or the records' author ("adopt").
	Transient bool
}

func (e *RefusedError) Error() string { return e.Message }

// NeedsPerson reports whether only a person can lift the refusal: trying again, after
// any backoff, meets it again until someone changes what its message names. A verb's
// --wait ends at it (see Result.NeedsPerson).
func (e *RefusedError) NeedsPerson() bool { return !e.Transient }

// RefusalReason is the refusal's reason, for packages that record it without importing
// this one.
func (e *RefusedError) RefusalReason() string { return e.Reason }

func Refused(reason, format string, args ...any) error {
	return &RefusedError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// commandIn finds the commands a message names, in double quotes.
var commandIn = regexp.MustCompile(`"(kubectl catalog [^"]+)"`)

// RefusalFix is the one command that resolves a refusal with reason and message (a
// record's Refused condition), for a record of namespace: the first command the message
// names, else the one of its reason (an unverified author, or one who may not: someone
// who may makes the namespace's records theirs with "kubectl catalog adopt", which checks
// each against their own rights). It is "" when the message says in words what to change
// (the spec, a grant).
func RefusalFix(reason, message, namespace string) string {
	if m := commandIn.FindStringSubmatch(message); m != nil {
		return m[1]
	}
	switch reason {
	case ReasonRefusedAuthorUnverified, ReasonRefusedNotAuthorized:
		return "kubectl catalog adopt -n " + namespace
	}
	return ""
}

// AsRefused returns the refusal err carries, if any.
func AsRefused(err error) (*RefusedError, bool) {
	var r *RefusedError
	ok := errors.As(err, &r)
	return r, ok
}

// NoVoucher ends the message of a refusal for want of a verified author where the user
// running the engine could lend the record their own rights: it names no command, since
// a verb and reconcile show it alike (reconcile adds the flag that does it).
const NoVoucher = "no one vouches for its author: only a person who trusts everyone who may write ConfigMaps there acts on it with their own rights, in namespace"
