package lifecycle

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
)

// TestWarnCatalog_ABrokersWarningCannotDriveTheTerminal: a catalog warning quotes what
// the broker sent (class and plan names); its control characters are shown escaped.
func TestWarnCatalog_ABrokersWarningCannotDriveTheTerminal(t *testing.T) {
	var out bytes.Buffer
	WarnCatalog(&out, &catalogsync.Result{Warnings: []string{"plan \x1b]0;owned\x07small\x1b[2J is new"}})
	assert.Equal(t, out.String(), "Warning: plan ^[]0;owned\\x07small^[[2J is new\n")
}

// TestProgress_ABrokersDescriptionCannotDriveTheTerminal: the live line and the notes
// show what a broker said (its operation's description) with control characters escaped.
func TestProgress_ABrokersDescriptionCannotDriveTheTerminal(t *testing.T) {
	for _, live := range []bool{true, false} {
		var out, errOut bytes.Buffer
		streams := cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)
		streams.OutTerminal = live
		f, done := NewFollow(streams, WaitFlags{Wait: true})
		f.Progress(engine.Result{Message: "creating\x1b[2J\x1b]0;owned\x07"})
		f.Note("the broker said \x1b[31mred")
		done()
		assert.Check(t, !strings.ContainsAny(errOut.String(), "\x1b\x07"), "live=%v: %q", live, errOut.String())
		assert.Check(t, strings.Contains(errOut.String(), "creating^[[2J"), "live=%v: %q", live, errOut.String())
	}
}
