package cmd_test

import (
	"testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
)

// TestBadInvocations_AreUsageErrors runs, verb by verb, invocations each verb refuses
// before it reaches a cluster: each is a usage error (exit code 2).
func TestBadInvocations_AreUsageErrors(t *testing.T) {
	for _, verb := range []struct {
		name        string
		invocations []cmdtest.BadInvocation
	}{
		{"access", []cmdtest.BadInvocation{
			{Name: "disable without namespace", Args: []string{"access", "disable", "redis"}, Want: "pass -n NS for one namespace, or -A"},
			{Name: "enable without namespace", Args: []string{"access", "enable", "redis"}, Want: "pass -n NS for one namespace, or -A"},
			{Name: "namespace and all", Args: []string{"access", "disable", "redis", "-n", "a", "-A"}, Want: "cannot be used together"},
			{Name: "bad dry run", Args: []string{"access", "disable", "redis", "-A", "--dry-run=yes"}, Want: "must be one of", PflagWording: true},
			{Name: "bad output", Args: []string{"access", "disable", "redis", "-A", "-o", "table"}, Want: "table"},
		}},
		{"bind", []cmdtest.BadInvocation{
			{Name: "missing instance", Args: []string{"bind"}, Want: "needs the INSTANCE to bind"},
			{Name: "two names", Args: []string{"bind", "a", "b"}, Want: "takes one INSTANCE"},
			{Name: "empty name", Args: []string{"bind", ""}, Want: "must not be empty"},
			{Name: "rotate without binding", Args: []string{"bind", "--rotate"}, Want: "--rotate needs the BINDING"},
			{Name: "rotate with params", Args: []string{"bind", "--rotate", "db", "-p", "a=b"}, Want: "cannot be combined with --param"},
			{Name: "rotate with dry run", Args: []string{"bind", "--rotate", "db", "--dry-run"}, Want: "--dry-run"},
			{Name: "unknown flag", Args: []string{"bind", "db", "--no-such"}, Want: "unknown flag"},
			{Name: "bad dry run", Args: []string{"bind", "db", "--dry-run=maybe"}, Want: `invalid value "maybe": must be one of none, client, server`, PflagWording: true},
			{Name: "dry run and wait", Args: []string{"bind", "db", "--dry-run=client", "--wait"}, Want: "cannot be used together"},
			{Name: "env without to", Args: []string{"bind", "db", "--env"}, Want: "give --to"},
			{Name: "bad env prefix", Args: []string{"bind", "db", "--to", "deploy/web", "--env-prefix", "1-"}, Want: "--env-prefix"},
			{Name: "bad workload", Args: []string{"bind", "db", "--to", "pod/web"}, Want: "cannot be projected into"},
			{Name: "job", Args: []string{"bind", "db", "--to", "job/migrate"}, Want: "Job's pod template"},
			{Name: "two instance namespaces", Args: []string{"bind", "team-a/db", "--instance-namespace", "team-c"}, Want: "give one of them"},
			{Name: "bad instance namespace", Args: []string{"bind", "Team_A/db"}, Want: `instance namespace "Team_A" is not a valid namespace name`},
			{Name: "no instance after the namespace", Args: []string{"bind", "team-a/"}, Want: "give NAMESPACE/INSTANCE"},
			{Name: "rotate with instance namespace", Args: []string{"bind", "--rotate", "db", "--instance-namespace", "team-a"}, Want: "--instance-namespace"},
			{Name: "workload twice", Args: []string{"bind", "db", "--to", "deploy/web", "--to", "deployment/web"}, Want: "given twice"},
			{Name: "bad secret name", Args: []string{"bind", "db", "--secret-name", "Not_Valid"}, Want: "--secret-name"},
			{Name: "bad rename", Args: []string{"bind", "db", "--rename-key", "uri"}, Want: `--rename-key "uri": expected FROM=TO`},
			{Name: "bad add key", Args: []string{"bind", "db", "--add-key", "=x"}, Want: `--add-key "=x"`},
			{Name: "bad remove key", Args: []string{"bind", "db", "--remove-key", "a/b"}, Want: `--remove-key "a/b"`},
			{Name: "json and file", Args: []string{"bind", "db", "--params-json", "{}", "--params-file", "p.json"}, Want: "cannot be used together"},
			{Name: "zero interval", Args: []string{"bind", "db", "--interval", "0s"}, Want: "--interval must be positive"},
			{Name: "bad output", Args: []string{"bind", "db", "-o", "nosuch"}, Want: "--output"},
		}},
		{"deprovision", []cmdtest.BadInvocation{
			{Name: "missing name", Args: []string{"deprovision", "--yes"}, Want: "needs the instance's NAME"},
			{Name: "two names", Args: []string{"deprovision", "a", "b", "--yes"}, Want: "takes one NAME"},
			{Name: "unknown flag", Args: []string{"deprovision", "db", "--force"}, Want: "unknown flag"},
			{Name: "abandon and wait", Args: []string{"deprovision", "db", "--abandon", "--wait", "--yes"}, Want: "cannot be used together"},
			{Name: "zero interval", Args: []string{"deprovision", "db", "--yes", "--interval", "0"}, Want: "--interval"},
			{Name: "bad bool", Args: []string{"deprovision", "db", "--yes=perhaps"}, Want: "invalid argument", PflagWording: true},
		}},
		{"provision", []cmdtest.BadInvocation{
			{Name: "missing name", Args: []string{"provision", "--class", "postgresql"}, Want: "needs the instance's NAME"},
			{Name: "two names", Args: []string{"provision", "a", "b"}, Want: "takes one NAME"},
			{Name: "empty name", Args: []string{"provision", ""}, Want: "must not be empty"},
			{Name: "unknown flag", Args: []string{"provision", "db", "--no-such"}, Want: "unknown flag"},
			{Name: "flag without value", Args: []string{"provision", "db", "--class"}, Want: "needs an argument"},
			{Name: "bad duration", Args: []string{"provision", "db", "--timeout", "soon"}, Want: "invalid argument", PflagWording: true},
			{Name: "bad bool", Args: []string{"provision", "db", "--wait=maybe"}, Want: "invalid argument", PflagWording: true},
			{Name: "json and file", Args: []string{"provision", "db", "--params-json", "{}", "--params-file", "p.json"}, Want: "cannot be used together"},
			{Name: "empty secret name", Args: []string{"provision", "db", "--params-from-secret", "/key"}, Want: "SECRET or SECRET/KEY"},
			{Name: "zero interval", Args: []string{"provision", "db", "--interval", "0s"}, Want: "--interval must be positive"},
			{Name: "bad output", Args: []string{"provision", "db", "-o", "nosuch"}, Want: "--output"},
		}},
		{"touch", []cmdtest.BadInvocation{
			{Name: "missing name", Args: []string{"touch", "instance"}, Want: "needs the instance's NAME"},
			{Name: "alias, missing name", Args: []string{"touch", "inst"}, Want: "needs the instance's NAME"},
			{Name: "two names", Args: []string{"touch", "instance", "a", "b"}, Want: "takes one NAME"},
			{Name: "unknown flag", Args: []string{"touch", "instance", "db", "-p", "a=1"}, Want: "unknown shorthand flag"},
			{Name: "zero interval", Args: []string{"touch", "instance", "db", "--interval", "0s"}, Want: "--interval"},
			{Name: "unknown kind", Args: []string{"touch", "binding", "b"}, Want: "unknown command"},
		}},
		{"unbind", []cmdtest.BadInvocation{
			{Name: "nothing named", Args: []string{"unbind"}, Want: "needs the BINDING"},
			{Name: "all without instance", Args: []string{"unbind", "--all"}, Want: "give the instance as the only argument"},
			{Name: "all with two instances", Args: []string{"unbind", "a", "b", "--all"}, Want: "got 2 arguments"},
			{Name: "instance and argument", Args: []string{"unbind", "a", "--instance", "db", "--all"}, Want: "names the instance already"},
			{Name: "instance alone", Args: []string{"unbind", "--instance", "db"}, Want: "add --all"},
			{Name: "all and name", Args: []string{"unbind", "db", "--all", "--name", "a"}, Want: "--all and --name"},
			{Name: "empty name in list", Args: []string{"unbind", "db", "--name", "a,,b"}, Want: "empty binding name"},
			{Name: "abandon and wait", Args: []string{"unbind", "db", "--abandon", "--wait"}, Want: "cannot be used together"},
			{Name: "zero interval", Args: []string{"unbind", "db", "--interval", "0"}, Want: "--interval"},
			{Name: "unknown flag", Args: []string{"unbind", "db", "--force"}, Want: "unknown flag"},
		}},
		{"update", []cmdtest.BadInvocation{
			{Name: "missing name", Args: []string{"update", "--plan", "standard"}, Want: "needs the instance's NAME"},
			{Name: "two names", Args: []string{"update", "a", "b", "--plan", "x"}, Want: "takes one NAME"},
			{Name: "nothing to update", Args: []string{"update", "db"}, Want: "nothing to update"},
			{Name: "only a timeout", Args: []string{"update", "db", "--timeout", "1m"}, Want: "--wait alone waits for the update under way"},
			{Name: "wait alone with a bad interval", Args: []string{"update", "db", "--wait", "--interval", "0s"}, Want: "--interval"},
			{Name: "wait alone with a dry run", Args: []string{"update", "db", "--wait", "--dry-run=client"}, Want: "nothing to update"},
			{Name: "unknown flag", Args: []string{"update", "db", "--class", "x"}, Want: "unknown flag"},
			{Name: "json and file", Args: []string{"update", "db", "--params-json", "{}", "--params-file", "-"}, Want: "cannot be used together"},
			{Name: "bad secret ref", Args: []string{"update", "db", "--params-from-secret", "/k"}, Want: "SECRET or SECRET/KEY"},
			{Name: "negative interval", Args: []string{"update", "db", "--plan", "x", "--interval", "-1s"}, Want: "--interval"},
			{Name: "bad output", Args: []string{"update", "db", "--plan", "x", "-o", "nosuch"}, Want: "--output"},
			{Name: "revert with a change", Args: []string{"update", "db", "--revert", "-p", "a=1"}, Want: "give it alone"},
			{Name: "bad dry run", Args: []string{"update", "db", "--plan", "x", "--dry-run=maybe"}, Want: "must be one of none, client, server", PflagWording: true},
			{Name: "dry run and wait", Args: []string{"update", "db", "--plan", "x", "--dry-run", "--wait"}, Want: "cannot be used together"},
			{Name: "dry run and revert", Args: []string{"update", "db", "--revert", "--dry-run=server"}, Want: "--revert cannot be combined with --dry-run"},
		}},
		{"wait", []cmdtest.BadInvocation{
			{Name: "nothing to wait for", Args: []string{"wait"}, Want: "needs what to wait for, such as instance/db"},
			{Name: "a kind of kubectl's", Args: []string{"wait", "pod/web"}, Want: `"pod/web" is not something to wait for: name it as instance/NAME or binding/NAME`},
			{Name: "a bare name", Args: []string{"wait", "db"}, Want: `"db" is not something to wait for`},
			{Name: "a kind without a name", Args: []string{"wait", "instance/"}, Want: `"instance/" names no instance: give instance/NAME`},
			{Name: "a kind alone", Args: []string{"wait", "instance"}, Want: `"instance" names no instance`},
			{Name: "a kind then TYPE/NAME", Args: []string{"wait", "instance", "binding/x"}, Want: "give names only"},
			{Name: "an invalid name", Args: []string{"wait", "instance/DB"}, Want: `"DB" is not a valid instance name`},
			{Name: "condition Ready false", Args: []string{"wait", "instance/db", "--for=condition=Ready=false"}, Want: "the Ready condition to be true only"},
			{Name: "another condition", Args: []string{"wait", "instance/db", "--for=condition=Failed"}, Want: "give --for=condition=Ready"},
			{Name: "jsonpath", Args: []string{"wait", "instance/db", "--for=jsonpath={.status.phase}=Ready"}, Want: "give --for=condition=Ready"},
			{Name: "create", Args: []string{"wait", "instance/db", "--for=create"}, Want: "or --for=delete (the record gone)"},
			{Name: "delete with a value", Args: []string{"wait", "instance/db", "--for=delete=true"}, Want: "give --for=condition=Ready"},
			{Name: "bad timeout", Args: []string{"wait", "instance/db", "--timeout", "soon"}, Want: "is not a duration", PflagWording: true},
			{Name: "zero interval", Args: []string{"wait", "instance/db", "--interval", "0s"}, Want: "--interval must be positive"},
			{Name: "unknown flag", Args: []string{"wait", "instance/db", "--wait"}, Want: "unknown flag"},
		}},
	} {
		t.Run(verb.name, func(t *testing.T) { cmdtest.UsageErrors(t, verb.invocations) })
	}
}
