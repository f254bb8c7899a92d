package lifecycle

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// DriveBinding runs the engine on one binding, as Drive does on an instance: until it
// settles (or is gone) with --wait, else for as long as there is work to do at once.
func DriveBinding(ctx context.Context, streams cmdutil.IOStreams, eng *catalog.Engine, namespace, name, verb string, w WaitFlags) (catalog.Result, error) {
	p := NewProgress(streams)
	defer p.Done()
	return eng.FollowBinding(ctx, namespace, name, verb, w.Follow(p))
}
