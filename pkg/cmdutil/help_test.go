package cmdutil

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestExamples_NormalisesIndentation(t *testing.T) {
	got := Examples(`
		# List brokers
		kubectl catalog get brokers

		# And classes
		kubectl catalog get classes
	`)
	assert.Equal(t, got, "  # List brokers\n  kubectl catalog get brokers\n\n  # And classes\n  kubectl catalog get classes")
}

func TestLongDesc_RemovesSourceIndentation(t *testing.T) {
	got := LongDesc(`
		First line.
		Second line.
	`)
	assert.Equal(t, got, "First line.\nSecond line.")
}
