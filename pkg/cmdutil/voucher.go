package cmdutil

import (
	"io"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

// Voucher is the engine's Voucher of an everyday verb (update, touch, share, unshare,
// bind --rotate) whose write would make its user the author of what another person wrote
// into the record: it shows what that means (PrintVouches) and asks as ConfirmVouches
// does (--yes, a terminal, or a refusal naming --yes); a dry run shows it only.
func Voucher(p prompt.Prompter, errOut io.Writer, yes bool, cmd string) engine.Voucher {
	confirm := ConfirmVouches(p, errOut, yes, cmd)
	return engine.Voucher{
		Confirm: func(v engine.Vouch) error { return confirm([]engine.Vouch{v}) },
		Shown:   func(v engine.Vouch) { PrintVouches(errOut, []engine.Vouch{v}) },
	}
}

// VouchYesUsage is the usage of the --yes of a verb that asks only before it makes its
// user the author of what another person wrote.
const VouchYesUsage = "Become the author of what another person wrote into the record without asking (needed when not in a terminal); without it the verb shows what that vouches for and asks."
