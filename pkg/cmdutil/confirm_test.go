package cmdutil

import (
	"bytes"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

func TestConfirm_YesTerminalOrNeedsYes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prompter *prompt.Scripted
		yes      bool
		needYes  string
		wantGo   bool
		wantErr  string
		wantCode int
		wantOut  string
	}{
		{name: "--yes goes on without asking", prompter: &prompt.Scripted{}, yes: true, needYes: "x", wantGo: true},
		{name: "terminal, yes", prompter: &prompt.Scripted{Answers: []string{"y"}}, wantGo: true},
		{name: "terminal, no", prompter: &prompt.Scripted{Answers: []string{"n"}}, wantOut: "Nothing was changed.\n"},
		{name: "no terminal needs --yes", needYes: NeedsYes("deprovision"),
			wantErr: "deprovision needs --yes when it cannot ask for confirmation (not a terminal)", wantCode: ExitUsage},
		{name: "no terminal, nothing to confirm", wantGo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p prompt.Prompter
			if tc.prompter != nil {
				p = tc.prompter
			}
			var errOut bytes.Buffer
			ok, err := Confirm(p, &errOut, tc.yes, tc.needYes)
			assert.Equal(t, ok, tc.wantGo)
			if tc.wantErr != "" {
				assert.Error(t, err, tc.wantErr)
				assert.Equal(t, ExitCode(err), tc.wantCode)
			} else {
				assert.NilError(t, err)
			}
			assert.Equal(t, errOut.String(), tc.wantOut)
			if tc.yes {
				assert.Equal(t, len(tc.prompter.Asked), 0)
			}
		})
	}
}
