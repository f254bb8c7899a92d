package cmdutil

import (
	"github.com/spf13/cobra"
)

// AddDryRunFlagOffering adds --dry-run to a command that offers only some of the
// strategies (offered, for completion): usage is its whole help line, a bare --dry-run
// means client, and any value parses, so that the command's Validate refuses what it
// does not offer in its own words.
func AddDryRunFlagOffering(cmd *cobra.Command, d *DryRunStrategy, usage string, offered ...DryRunStrategy) {
	values := make([]string, len(offered))
	for i, s := range offered {
		values[i] = string(s)
	}
	addDryRunFlag(cmd, d, (*anyDryRun)(d), usage, values)
}

// Offered reports whether d is one of offered ("" counts as none).
func (d DryRunStrategy) Offered(offered ...DryRunStrategy) bool {
	if d == "" {
		d = DryRunNone
	}
	for _, s := range offered {
		if d == s {
			return true
		}
	}
	return false
}

// anyDryRun is a DryRunStrategy that takes any value when parsed; the command checks it.
type anyDryRun DryRunStrategy

func (d *anyDryRun) Set(v string) error { *d = anyDryRun(v); return nil }
func (d *anyDryRun) String() string     { return (*DryRunStrategy)(d).String() }
func (d *anyDryRun) Type() string       { return "string" }
