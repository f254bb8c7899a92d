package printers

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestTable_KubectlStyle(t *testing.T) {
	var b bytes.Buffer
	tbl := NewTable(&b, "name", "url", "status")
	tbl.Append("db-broker", "https://db.example.com", "Ready")
	tbl.Append("mq", "http://mq:8080", "")
	assert.NilError(t, tbl.Render())
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	assert.DeepEqual(t, lines, []string{
		"NAME        URL                      STATUS",
		"db-broker   https://db.example.com   Ready",
		"mq          http://mq:8080",
	})
}

func TestTable_NoRowsPrintsNothing(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, NewTable(&b, "name").Render())
	assert.Equal(t, b.String(), "")
}
