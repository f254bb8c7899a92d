package lifecycle

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

func TestNewFollow_NotesAndProgressGoToStandardError(t *testing.T) {
	var out, errOut bytes.Buffer
	streams := cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)
	streams.OutTerminal = true
	f, done := NewFollow(streams, WaitFlags{Wait: true})
	assert.Assert(t, f.Wait)

	f.Note(`Provisioning instance "db"...`)
	f.Progress(engine.Result{Message: "the broker is provisioning"})
	done()

	assert.Equal(t, out.String(), "")
	assert.Assert(t, strings.HasPrefix(errOut.String(), "Provisioning instance \"db\"...\n\rthe broker is provisioning (0s)"), "%q", errOut.String())
	assert.Assert(t, strings.HasSuffix(errOut.String(), "\n"), "done ends the live line")

	errOut.Reset()
	_, done = NewFollow(streams, WaitFlags{})
	done()
	assert.Equal(t, errOut.String(), "", "nothing to end before any progress")
}
