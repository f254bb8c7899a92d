package cmdutil

import (
	"context"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

// VerbClients is what the Complete of a verb that drives records builds: the user's
// namespace, the engine (polling a broker at most every pollInterval without
// Retry-After; 0 for the default) and, when streams can prompt, a prompter. A prompter
// already given (a test's) is kept.
func (f *Factory) VerbClients(streams IOStreams, pollInterval time.Duration, p prompt.Prompter) (namespace string, eng *engine.Engine, prompter prompt.Prompter, err error) {
	eng, namespace, err = f.EngineIn(EngineOptions{PollInterval: pollInterval})
	if err != nil {
		return "", nil, nil, err
	}
	return namespace, eng, f.Prompter(streams, p), nil
}

// Prompter is the prompter of a command on streams: given when there is one (a test's),
// else one asking on the terminal when streams can prompt, else nil. It is the only
// place a prompter is built.
func (f *Factory) Prompter(streams IOStreams, given prompt.Prompter) prompt.Prompter {
	if given != nil || !streams.CanPrompt() {
		return given
	}
	return prompt.NewSurvey(streams.In, streams.Out, streams.ErrOut)
}

// EngineIn is what the Complete of a command that calls the engine builds: the engine
// (with opts) and the user's namespace.
func (f *Factory) EngineIn(opts EngineOptions) (*engine.Engine, string, error) {
	namespace, _, err := f.Namespace()
	if err != nil {
		return nil, "", err
	}
	e, err := f.Engine(opts)
	if err != nil {
		return nil, "", err
	}
	return e.Engine, namespace, nil
}

// Clients are what a verb that drives records works with beside its flags: the
// streams it was built with, and the namespace, engine and prompter its Complete
// builds with Build.
type Clients struct {
	Namespace string
	Engine    *engine.Engine
	Prompter  prompt.Prompter
	Streams   IOStreams
	// ReconcileRuns says when the installed reconcile takes up a call left to it
	// (install.WhenReconcileRuns); nil when not built.
	ReconcileRuns func(context.Context) string
}

// Build builds the namespace, the engine and, when the streams can prompt, the
// prompter (see VerbClients).
func (c *Clients) Build(f *Factory, pollInterval time.Duration) (err error) {
	c.Namespace, c.Engine, c.Prompter, err = f.VerbClients(c.Streams, pollInterval, c.Prompter)
	if c.ReconcileRuns == nil {
		c.ReconcileRuns = f.WhenReconcileRuns
	}
	return err
}

// WhenReconcileRuns says when the reconcile installed in the catalog namespace (or the
// default one) takes up a call left to it, as far as the user may read its workloads
// (install.WhenReconcileRuns); "" when no client can be built.
func (f *Factory) WhenReconcileRuns(ctx context.Context) string {
	core, err := f.KubernetesClient()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	now := time.Now()
	if f.Now != nil {
		now = f.Now()
	}
	return install.WhenReconcileRuns(ctx, core, now, f.CatalogNamespace, install.DefaultNamespace)
}
