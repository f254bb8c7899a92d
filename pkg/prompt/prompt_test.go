package prompt

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestScripted_AnswersInOrderAndRecordsQuestions(t *testing.T) {
	p := &Scripted{Answers: []string{"postgresql", "5", "yes", "n"}}
	var _ Prompter = p
	v, err := p.Select("Class:", []string{"postgresql", "redis"}, "")
	assert.NilError(t, err)
	assert.Equal(t, v, "postgresql")
	v, err = p.Input("Parameter storage_gb:", "Disk size", "")
	assert.NilError(t, err)
	assert.Equal(t, v, "5")
	ok, err := p.Confirm("Continue?", false)
	assert.NilError(t, err)
	assert.Assert(t, ok)
	ok, err = p.Confirm("Really?", true)
	assert.NilError(t, err)
	assert.Assert(t, !ok, "only y or yes is yes")
	assert.DeepEqual(t, p.Asked, []string{"Class:", "Parameter storage_gb:", "Continue?", "Really?"})
}

func TestScripted_RunningOutOfAnswersIsAnError(t *testing.T) {
	p := &Scripted{}
	_, err := p.Input("Plan:", "", "")
	assert.ErrorContains(t, err, "unexpected prompt: Plan:")
	ok, err := p.Confirm("Continue?", true)
	assert.Assert(t, err != nil && !ok)
}
