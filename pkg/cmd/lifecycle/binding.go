package lifecycle

import (
	"context"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// DriveBinding runs the engine on one binding, as Drive does on an instance: until it
// settles (or is gone) with --wait, else for as long as there is work to do at once. It
// shows progress, releases its claim when it stops, and turns a timeout or an
// interruption into an error saying how to resume.
func DriveBinding(ctx context.Context, streams cmdutil.IOStreams, eng *catalog.Engine, namespace, name, verb string, w WaitFlags) (catalog.Result, error) {
	return DriveRecord(ctx, streams, Driven{
		Kind:  "binding",
		Drive: eng.DriveBinding,
		Release: func(ctx context.Context, r catalog.Result) {
			if r.Binding != nil {
				_ = eng.ReleaseBinding(ctx, r.Binding)
			}
		},
		Again: again(verb, name),
	}, namespace, name, verb, w)
}

// again is how to wait for the binding again: an unbind can be repeated, a bind cannot
// (the name is taken), so it is left to reconcile.
func again(verb, name string) string {
	if verb == "unbind" {
		return fmt.Sprintf(`, or wait again with "kubectl catalog unbind %s --wait"`, name)
	}
	return ""
}
