package describe

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// record is what describe instance and describe binding share: the name given, and
// what Complete sets.
type record struct {
	Name string

	Namespace        string
	CatalogNamespace string
	Reader           *records.Reader
	Streams          cmdutil.IOStreams
	Now              func() time.Time

	factory *cmdutil.Factory // for the workloads using an instance's bindings, and the Events
}

// safeStreams are s with what is written to Out and ErrOut escaped for a terminal
// (iostreams.SafeText): describe shows text others wrote (brokers' names and
// descriptions, status messages, Events).
func safeStreams(s cmdutil.IOStreams) cmdutil.IOStreams {
	s.Out = iostreams.SafeWriter{W: s.Out}
	s.ErrOut = iostreams.SafeWriter{W: s.ErrOut}
	return s
}

// Validate checks the options without any I/O; it changes nothing.
func (o *record) Validate() error {
	if o.Name == "" {
		return cmdutil.UsageErrorf("a name is required")
	}
	return nil
}

// Complete builds the reader and finds the namespaces.
func (o *record) Complete(f *cmdutil.Factory) error {
	r, ns, err := f.ReaderIn()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Reader, o.Now, o.factory = ns, f.CatalogNamespace, r, f.Now, f
	return nil
}

// refusal writes why the engine refuses to act on a record of kind (its Refused
// condition is True), what it holds back, and the command that resolves it.
func refusal(b *strings.Builder, kind, namespace string, st *v1alpha1.OperationStatus) {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRefused)
	if c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	line := func(k, v string) { fmt.Fprintf(b, "  %-16s%s\n", k+":", v) }
	fmt.Fprintf(b, "Refused:          %s (not a broker failure: nothing is sent to the broker for the %s until this is resolved)\n", c.Reason, kind)
	line("why", c.Message)
	if op := st.InFlight; op != nil {
		line("held back", fmt.Sprintf("the %s begun at %s, which the broker may still be working on", strings.ToLower(string(op.Type)), op.StartedAt.UTC().Format(time.RFC3339)))
	}
	if fix := engine.RefusalFix(c.Reason, c.Message, namespace); fix != "" {
		line("resolve", fix)
	}
}
