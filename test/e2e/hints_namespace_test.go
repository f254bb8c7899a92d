package e2e

import (
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// hintCommand finds a command line a message suggests, in double quotes.
var hintCommand = regexp.MustCompile(`"(kubectl catalog [^"]+)"`)

// The hints of the commands below, run in a namespace that is not the current one
// (the kubeconfig's is "default"), each name the namespace: copied as they are printed,
// they act on the record they are about. Each case says which hint it is about.
func TestHints_InANamespaceNotTheCurrentOne_CarryIt(t *testing.T) {
	t.Parallel()
	ns, b, _ := openBrokerSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	for _, tc := range []struct {
		name string
		args []string
		// hint is the command line the output must hold, without its -n NS.
		hint  string
		fault bool // the broker refuses the update first
	}{
		{name: "revert with a dry run", args: []string{"update", "db", "--revert", "--dry-run=client"}, hint: "kubectl catalog describe instance db"},
		{name: "touch of a missing instance", args: []string{"touch", "instance", "nosuch"}, hint: "kubectl catalog get instances"},
		{name: "bind of a missing instance", args: []string{"bind", "nosuch"}, hint: "kubectl catalog get instances"},
		{name: "unbind of nothing", args: []string{"unbind"}, hint: "kubectl catalog get bindings"},
		{name: "a refused update", args: []string{"update", "db", "-p", "storage_gb=8", "--wait"}, fault: true, hint: "kubectl catalog update db --revert"},
		{name: "describe after a refused update", args: []string{"describe", "instance", "db"}, hint: "kubectl catalog update db --revert"},
	} {
		if tc.fault {
			_, err := b.InjectFault(broker.Fault{Op: broker.OpUpdate, Action: broker.ActionRespond, Status: 400, Description: "storage above 6 GB needs plan standard"})
			assert.NilError(t, err)
		}
		r := instCatalog(t, ns, tc.args...)
		out := r.Stdout + r.Stderr

		assert.Check(t, strings.Contains(out, `"`+tc.hint+" -n "+ns+`"`), "%s: %v does not suggest %q with -n %s:\n%s", tc.name, tc.args, tc.hint, ns, out)
		for _, m := range hintCommand.FindAllStringSubmatch(out, -1) {
			if namesRecord(m[1]) {
				assert.Check(t, strings.Contains(m[1], " -n "+ns), "%s: %v suggests %q, without -n %s", tc.name, tc.args, m[1], ns)
			}
		}
	}
}

// namesRecord reports whether a command line names a record of a namespace or lists a
// namespace's records (not a verb alone, nor one of every namespace).
func namesRecord(cmd string) bool {
	return regexp.MustCompile(`^kubectl catalog (?:(?:describe (?:instance|binding)|unbind|deprovision|update|touch instance|bind|share|unshare|provision) [^-\s]|get (?:instances|bindings))`).MatchString(cmd) &&
		!strings.Contains(cmd, " -A")
}
