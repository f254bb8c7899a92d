package cmdutil

import (
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

// VerbClients is what the Complete of a verb that drives records builds: the user's
// namespace, the engine (polling a broker at most every pollInterval without
// Retry-After; 0 for the default) and, when streams can prompt, a prompter. A prompter
// already given (a test's) is kept.
func (f *Factory) VerbClients(streams IOStreams, pollInterval time.Duration, p prompt.Prompter) (namespace string, eng *engine.Engine, prompter prompt.Prompter, err error) {
	namespace, _, err = f.Namespace()
	if err != nil {
		return "", nil, nil, err
	}
	e, err := f.Engine(EngineOptions{PollInterval: pollInterval})
	if err != nil {
		return "", nil, nil, err
	}
	if p == nil && streams.CanPrompt() {
		p = prompt.NewSurvey(streams.In, streams.Out, streams.ErrOut)
	}
	return namespace, e.Engine, p, nil
}
