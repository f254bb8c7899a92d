// Package hint builds the kubectl catalog command lines that messages suggest, so that
// each one carries the namespace of the record it is about: copied as it is, it acts
// on that record, not on one of the same name in the reader's current namespace.
package hint

import "strings"

// Command is "kubectl catalog ARGS -n NAMESPACE", the command line a message suggests
// for a record of namespace ns; ns "" leaves -n out (a cluster-scoped object).
func Command(ns string, args ...string) string {
	s := "kubectl catalog " + strings.Join(args, " ")
	if ns != "" {
		s += " -n " + ns
	}
	return s
}

// Quoted is Command in double quotes, as messages name a command.
func Quoted(ns string, args ...string) string { return `"` + Command(ns, args...) + `"` }
