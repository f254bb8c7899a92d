package lifecycle

import (
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Following shows what an engine operation says while it follows the records it wrote,
// one after the other: the progress of each, and the lines it notes. A line ends the
// progress shown so far, and the next record's progress starts after it, timed from
// then.
type Following struct {
	streams cmdutil.IOStreams
	p       *Progress
}

// NewFollowing shows on streams' error output.
func NewFollowing(streams cmdutil.IOStreams) *Following {
	return &Following{streams: streams, p: NewProgress(streams)}
}

// Follow is how the operation follows its records for the wait flags w, reporting here.
func (f *Following) Follow(w WaitFlags) engine.Follow {
	follow := w.Follow(nil)
	follow.Progress = func(r engine.Result) { f.p.Show(r) }
	follow.Note = func(line string) { f.Say("%s\n", iostreams.SafeText(line)) }
	return follow
}

// Say ends the progress shown so far and prints a line of its own.
func (f *Following) Say(format string, args ...any) {
	f.Done()
	fmt.Fprintf(f.streams.ErrOut, format, args...)
}

// Done ends the progress shown so far; what follows starts a new one.
func (f *Following) Done() {
	f.p.Done()
	f.p = NewProgress(f.streams)
}

// BindInstance is the instance a binding binds and its namespace ("" for the
// binding's), from instance (INSTANCE or NAMESPACE/INSTANCE) and instanceNamespace
// (--instance-namespace); rotate: instance names the binding to rotate.
func BindInstance(instance, instanceNamespace string, rotate bool) (name, namespace string, err error) {
	name, namespace = instance, instanceNamespace
	if ns, n, ok := strings.Cut(instance, "/"); ok && !rotate {
		if namespace != "" && namespace != ns {
			return "", "", cmdutil.UsageErrorf("%q names namespace %q, and --instance-namespace says %q: give one of them", instance, ns, namespace)
		}
		name, namespace = n, ns
	}
	if rotate && namespace != "" {
		return "", "", cmdutil.UsageErrorf("--rotate keeps the binding as it is and cannot be combined with --instance-namespace")
	}
	if namespace != "" {
		if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
			return "", "", cmdutil.UsageErrorf("instance namespace %q is not a valid namespace name: %s", namespace, strings.Join(errs, "; "))
		}
		if name == "" {
			return "", "", cmdutil.UsageErrorf("the instance name must not be empty: give NAMESPACE/INSTANCE")
		}
	}
	return name, namespace, nil
}
