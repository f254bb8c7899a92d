package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

// PrintVouches says what the user running a command vouches for by becoming the author
// of records another person wrote (engine.Vouch): each record, who wrote it, and what the
// engine then does on her authority. Text from the records is printed safely.
func PrintVouches(w io.Writer, vs []engine.Vouch) {
	for _, v := range vs {
		fmt.Fprintf(w, "You become the author of %s %q in namespace %q (%s): on your authority from then on,\n",
			v.Kind, v.Name, v.Namespace, safe(v.Written()))
		for _, m := range v.Means {
			fmt.Fprintf(w, "  - %s\n", safe(m))
		}
	}
}

// ConfirmVouches is the engine's Confirm of a command that makes its user vouch for
// records another person wrote: it prints what that means (PrintVouches), then goes on
// with --yes (yes), asks in a terminal (p), default no, and otherwise refuses with an
// error naming --yes. A no, or a refusal, changes nothing.
func ConfirmVouches(p prompt.Prompter, errOut io.Writer, yes bool, cmd string) func([]engine.Vouch) error {
	return func(vs []engine.Vouch) error {
		PrintVouches(errOut, vs)
		ok, err := Confirm(p, errOut, yes, cmd+" needs --yes to make you the author of what another person wrote when it cannot ask (not a terminal): nothing was changed; check what is listed above, then run it again with --yes")
		if err != nil {
			return err
		}
		if !ok {
			return &SilentError{Code: ExitError}
		}
		return nil
	}
}

// NotConfirmed reports whether err is a command's refusal to vouch for records another
// person wrote for want of a confirmation.
func NotConfirmed(err error) bool { return errors.Is(err, engine.ErrNotConfirmed) }

// safe is s with every control character escaped, so that text another person wrote
// cannot drive the user's terminal.
func safe(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
