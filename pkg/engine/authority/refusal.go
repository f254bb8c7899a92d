package authority

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
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

// commandIn finds the commands a message names, in double quotes that are not escaped:
// a name quoted into a message (%q) escapes every double quote it holds.
// The engine ends a sentence with the command it names: the closing quote ends the
// message or is followed by punctuation, where a name quoted into a sentence is followed
// by more of it.
var commandIn = regexp.MustCompile(`(?:^|[^\\])"(kubectl catalog [^"\\]+)"(?:$|[).;,])`)

// fixVerbs are the verbs of the commands the engine names as the fix of a refusal, by
// reason: a refusal's message also quotes names others chose (a broker's class and plan
// names, an author's name), and one of those may read as a command.
var fixVerbs = map[string][]string{
	ReasonRefusedAuthorUnverified:    {"init", "adopt"},
	ReasonRefusedNotAuthorized:       {"adopt"},
	ReasonRefusedUntrustedReference:  {"update"},
	ReasonRefusedPlanNotAllowed:      {"access"},
	ReasonRefusedIDInUse:             {"deprovision", "unbind"},
	ReasonRefusedNamespaceNotAllowed: {"update"},
	ReasonRefusedNotShared:           {"share"},
	ReasonRefusedLimitReached:        {"update"},
	// The engine's own refusals of a status it never writes, and of a Secret written
	// before its binding asked for environment variables.
	"RefusedInconsistentStatus": {"deprovision", "unbind"},
	"RefusedForbiddenEnv":       {"bind"},
}

// plainWord is a word of a command the engine builds: a flag, or a value made of the
// characters of Kubernetes names, OSB names and placeholders, with no quote, space,
// shell metacharacter or control character.
var plainWord = regexp.MustCompile(`^(?:--?[a-z][a-z-]*(?:=[A-Za-z0-9._/:=-]+)?|[A-Za-z0-9][A-Za-z0-9._/:=-]*|\.\.\.)$`)

// FixCommand is the command a refusal's message names as its fix, in double quotes, for a
// record of namespace ns: "kubectl catalog ARGS -n NS" when every argument is a plain
// word (names others chose, a broker's class and plan names, go into commands only
// then), and otherwise the same in words with the names left out, which names no
// command.
func FixCommand(ns string, args ...string) string {
	for _, a := range append([]string{ns}, args...) {
		if !plainWord.MatchString(a) || strings.HasPrefix(a, "-") {
			return "kubectl catalog " + args[0] + " (the names hold characters a command line does not take as they are)"
		}
	}
	return `"kubectl catalog ` + strings.Join(args, " ") + " -n " + ns + `"`
}

// RefusalFix is the one command that resolves a refusal with reason and message (a
// record's Refused condition), for a record of namespace. It is taken only from what the
// engine wrote, never from a name others chose that the message quotes: for an
// unverified author, or one who may not, the command of the reason (someone who may
// makes the namespace's records theirs with "kubectl catalog adopt", which checks each
// against their own rights) unless the message names "init" or "adopt" as below;
// otherwise the last command the message names (the engine
// ends a refusal with its fix), when it is the verb of the reason's fix and made of plain
// words only. It is "" when the message says in words what to change (the spec, a grant),
// or names no command that passes.
func RefusalFix(reason, message, namespace string) string {
	if cmd := fixIn(reason, message); cmd != "" {
		return cmd
	}
	switch reason {
	case ReasonRefusedAuthorUnverified, ReasonRefusedNotAuthorized:
		if plainWord.MatchString(namespace) {
			return "kubectl catalog adopt -n " + namespace
		}
	}
	return ""
}

// fixIn is the last command message names when it is one of the fixes of reason, made of
// plain words; "" otherwise.
func fixIn(reason, message string) string {
	verbs, ok := fixVerbs[reason]
	if !ok {
		return ""
	}
	ms := commandIn.FindAllStringSubmatch(message, -1)
	if len(ms) == 0 {
		return ""
	}
	cmd := ms[len(ms)-1][1]
	words := strings.Fields(cmd)
	if len(words) < 3 || strings.Join(words, " ") != cmd {
		return ""
	}
	found := false
	for _, v := range verbs {
		found = found || words[2] == v
	}
	if !found {
		return ""
	}
	for _, w := range words[2:] {
		if !plainWord.MatchString(w) {
			return ""
		}
	}
	return cmd
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
