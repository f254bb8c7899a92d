package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// DryRunStrategy is the value of --dry-run, with kubectl's meaning.
type DryRunStrategy string

// The --dry-run strategies.
const (
	// DryRunNone writes and calls brokers: the command does what it says.
	DryRunNone DryRunStrategy = "none"
	// DryRunClient prints what would be written; it contacts no broker and writes
	// nothing (it may read the cluster to work out what it would write).
	DryRunClient DryRunStrategy = "client"
	// DryRunServer sends the record writes to the API server as a dry run
	// (DryRun=All): validation and admission, the trust policy included, see them;
	// nothing is stored and no broker is called.
	DryRunServer DryRunStrategy = "server"
)

// DryRunValues are the values --dry-run accepts, in the order help lists them.
var DryRunValues = []string{string(DryRunNone), string(DryRunClient), string(DryRunServer)}

// Set implements pflag.Value: an invalid value is a usage error listing the
// allowed ones.
func (d *DryRunStrategy) Set(v string) error {
	switch DryRunStrategy(v) {
	case DryRunNone, DryRunClient, DryRunServer:
		*d = DryRunStrategy(v)
		return nil
	}
	return fmt.Errorf("invalid value %q: must be one of %s (a bare --dry-run means client)", v, strings.Join(DryRunValues, ", "))
}

func (d *DryRunStrategy) String() string {
	if *d == "" {
		return string(DryRunNone)
	}
	return string(*d)
}

// Type implements pflag.Value.
func (d *DryRunStrategy) Type() string { return "string" }

// Enabled reports whether the command is a dry run (client or server).
func (d DryRunStrategy) Enabled() bool { return d == DryRunClient || d == DryRunServer }

// Server reports whether the strategy is DryRunServer (printers.DryRun).
func (d DryRunStrategy) Server() bool { return d == DryRunServer }

// Note is DryRunNote of d (printers.DryRun).
func (d DryRunStrategy) Note(what string) string { return DryRunNote(d, what) }

// Engine is the strategy as the engine's operations take it.
func (d DryRunStrategy) Engine() engine.DryRun {
	if d == "" {
		return engine.DryRunNone
	}
	return engine.DryRun(d)
}

// AddDryRunFlag adds --dry-run to cmd, with kubectl's semantics: "none" (the
// default), "client", "server"; a bare --dry-run means client; any other value
// is a usage error naming the allowed values. what says what is written, for
// the help text ("the instance record").
func AddDryRunFlag(cmd *cobra.Command, d *DryRunStrategy, what string) {
	addDryRunFlag(cmd, d, d, fmt.Sprintf(`Must be "none", "client" or "server". client: print %s that would be written, contacting no broker and writing nothing. server: also have the API server check the writes (validation and admission) without storing them. A bare --dry-run means client.`, what), DryRunValues)
}

// addDryRunFlag adds --dry-run, parsed by value into d ("none" until given; a bare
// --dry-run means client), completed with values.
func addDryRunFlag(cmd *cobra.Command, d *DryRunStrategy, value pflag.Value, usage string, values []string) {
	if *d == "" {
		*d = DryRunNone
	}
	cmd.Flags().Var(value, "dry-run", usage)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = string(DryRunClient)
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// DryRunWithWait refuses --wait with a dry run, which starts no operation to
// wait for: a usage error when both are set, nil otherwise. nothing says what
// the dry run leaves undone ("records nothing", "deletes nothing").
func DryRunWithWait(d DryRunStrategy, wait bool, nothing string) error {
	if d.Enabled() && wait {
		return UsageErrorf("--dry-run and --wait cannot be used together: a dry run %s, so there is nothing to wait for", nothing)
	}
	return nil
}

// DryRunNote is the line printed to stderr after a dry run: what would have
// been done, and that nothing was.
func DryRunNote(d DryRunStrategy, what string) string {
	if d == DryRunServer {
		return fmt.Sprintf("%s (server dry run: accepted by the API server, nothing was stored and no broker was called)", what)
	}
	return fmt.Sprintf("%s (dry run: nothing was written and no broker was called)", what)
}
