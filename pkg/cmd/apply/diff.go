package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

var diffLong = cmdutil.LongDesc(`
	Show what "kubectl catalog apply -f" would change: for each object the
	manifests name, a unified diff of its spec as the record has it and as apply
	would make it (an object to create is all new). The manifests are checked as
	apply checks them; nothing is written and no broker is called.

	Exit status, as kubectl diff's: 0 when there is nothing to change, 1 when
	there are differences, 2 on an error (in the manifests, each named by its
	file and document, or reading the cluster), so that an error is never
	taken for drift.`)

var diffExample = cmdutil.Examples(`
	# What would applying the directory change?
	kubectl catalog diff -f services/

	# In a pipeline: fail when the cluster has drifted from Git
	kubectl catalog diff -f services/ -R || echo "drift"`)

// DiffOptions are the options of diff.
type DiffOptions struct {
	Options
}

// NewCmdDiff returns the diff command. runF, when not nil, is called with the completed
// options instead of Run.
func NewCmdDiff(f *cmdutil.Factory, runF func(*DiffOptions) error) *cobra.Command {
	o := &DiffOptions{Options: Options{VerbOptions: lifecycle.NewVerbOptions(f)}}
	o.Output, o.Wait.Interval = nil, 2*time.Second
	cmd := &cobra.Command{
		Use:     "diff -f FILENAME [-R]",
		Short:   "Show what apply -f would change",
		Long:    diffLong,
		Example: diffExample,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(f, o, runF),
	}
	o.Files.AddFlags(cmd, "to compare")
	return cmd
}

// Validate checks the flags without I/O.
func (o *DiffOptions) Validate() error {
	return o.Files.Validate()
}

// Run prints the differences; see diffLong for the exit status.
func (o *DiffOptions) Run(ctx context.Context) error {
	objs, err := o.load()
	if err == nil {
		var actions []*action
		if actions, err = o.planner().plan(ctx, objs); err == nil {
			return o.print(actions)
		}
	}
	var usage *cmdutil.UsageError
	if errors.Is(err, context.Canceled) || errors.As(err, &usage) {
		return err
	}
	// An error in the manifests (named by file and document) or in reading the
	// cluster: no usage hint, and more than 1, as kubectl diff, so that it is never
	// taken for differences.
	fmt.Fprintf(o.Streams.ErrOut, "error: nothing was compared:\n%s\n", iostreams.SafeText(err.Error()))
	return &cmdutil.SilentError{Code: cmdutil.ExitDiffError}
}

func (o *DiffOptions) print(actions []*action) error {
	differ := false
	for _, a := range actions {
		if a.op == opUnchanged {
			continue
		}
		differ = true
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(viewYAML(a.obj, a.before, a.beforeMeta)), B: difflib.SplitLines(viewYAML(a.obj, a.after, a.afterMeta)),
			FromFile: "live/" + a.obj.Resource(), ToFile: "manifest/" + a.obj.Resource(), Context: 3,
		})
		if err != nil {
			return err
		}
		fmt.Fprint(o.Streams.Out, text)
	}
	if differ {
		return &cmdutil.SilentError{Code: 1}
	}
	return nil
}
