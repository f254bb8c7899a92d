package describe

import (
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// record is what describe instance and describe binding share: the name given, and
// what Complete sets.
type record struct {
	Name string

	Namespace        string
	CatalogNamespace string
	Reader           *engine.Reader
	Streams          cmdutil.IOStreams
	Now              func() time.Time

	factory *cmdutil.Factory // for the workloads using an instance's bindings, and the Events
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
