package marketplace

import (
	"errors"
	"fmt"
	"strings"
)

// Reason classifies an *Error.
type Reason string

// Reasons of marketplace errors.
const (
	// ReasonNotFound: no class or plan of that name is visible in the namespace.
	ReasonNotFound Reason = "NotFound"
	// ReasonAmbiguous: several brokers offer a class of that name.
	ReasonAmbiguous Reason = "Ambiguous"
	// ReasonRemoved: the broker no longer offers the class or plan.
	ReasonRemoved Reason = "Removed"
	// ReasonDisabled: an access rule disables the class or plan in the namespace.
	ReasonDisabled Reason = "Disabled"
)

// Error is a class or plan that cannot be used. Its message names it and says what to do.
type Error struct {
	Reason Reason
	// Kind is "class" or "plan".
	Kind string
	// Name is the name the user gave.
	Name string
	// Class is the class's external name, for plans.
	Class string
	// Broker is the broker offering the class, when known.
	Broker    string
	Namespace string
	// Suggestions are the closest visible names, for ReasonNotFound; Candidates are the
	// qualified names (BROKER/CLASS) to choose from, for ReasonAmbiguous.
	Suggestions []string
	Candidates  []string
	// Next replaces what an ambiguous error tells the user to do (name one of the
	// candidates as BROKER/CLASS), for names the user did not type.
	Next string
}

func (e *Error) Error() string {
	what := fmt.Sprintf("%s %q", e.Kind, e.Name)
	if e.Kind == "plan" && e.Class != "" {
		what = fmt.Sprintf("plan %q of class %q", e.Name, e.Class)
	}
	switch e.Reason {
	case ReasonNotFound:
		msg := fmt.Sprintf("%s not found %s", what, e.where("in the marketplace of namespace %q"))
		if len(e.Suggestions) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", quoteJoin(e.Suggestions))
		}
		switch {
		case e.Kind == "plan" && e.Class != "":
			return msg + fmt.Sprintf(` (run "kubectl catalog get plans -c %s" to list them)`, e.Class)
		case e.Kind == "plan":
			return msg + ` (run "kubectl catalog get plans" to list them)`
		}
		return msg + ` (run "kubectl catalog marketplace" to list what is offered)`
	case ReasonAmbiguous:
		if e.Next != "" {
			return fmt.Sprintf("%s is offered by several brokers %s: %s; %s", what, e.where("in namespace %q"), quoteJoin(e.Candidates), e.Next)
		}
		return fmt.Sprintf("%s is offered by several brokers %s: name one of %s (BROKER/CLASS)",
			what, e.where("in namespace %q"), quoteJoin(e.Candidates))
	case ReasonRemoved:
		return fmt.Sprintf("%s is no longer offered by broker %q: choose another one (kubectl catalog marketplace), or run \"kubectl catalog sync broker %s\" if the broker offers it again",
			what, e.Broker, e.Broker)
	case ReasonDisabled:
		return fmt.Sprintf("%s is not enabled in namespace %q: ask a catalog administrator to run \"kubectl catalog access enable %s -n %s\"",
			what, e.Namespace, e.qualified(), e.Namespace)
	}
	return what + ": " + string(e.Reason)
}

// where says where the name was looked up: format (with the namespace), or every
// namespace.
func (e *Error) where(format string) string {
	if e.Namespace == "" {
		return "in any namespace"
	}
	return fmt.Sprintf(format, e.Namespace)
}

func (e *Error) qualified() string {
	if e.Kind == "plan" {
		return e.Class + "/" + e.Name
	}
	return e.Name
}

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func reasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// IsNotFound reports whether err says no class or plan of that name is visible.
func IsNotFound(err error) bool { return reasonOf(err) == ReasonNotFound }

// IsAmbiguous reports whether err says several brokers offer a class of that name.
func IsAmbiguous(err error) bool { return reasonOf(err) == ReasonAmbiguous }

// IsRemoved reports whether err says the broker no longer offers the class or plan.
func IsRemoved(err error) bool { return reasonOf(err) == ReasonRemoved }

// IsDisabled reports whether err says an access rule disables the class or plan.
func IsDisabled(err error) bool { return reasonOf(err) == ReasonDisabled }
