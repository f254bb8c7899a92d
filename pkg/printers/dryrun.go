package printers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

// DryRun is a command's --dry-run as a report of it needs: whether the API server saw
// the writes, and the line that follows the report.
type DryRun interface {
	// Server reports a server dry run (the writes sent with DryRun=All).
	Server() bool
	// Note is the line printed to stderr after a dry run: what would have happened.
	Note(what string) string
}

// PrintDryRun reports a dry run of a write of obj (a record): with -o json,
// yaml, name, ... the record as it would be written (for --dry-run=server, as
// the API server returned it); otherwise one line "KIND/NAME OPERATION (dry run)"
// on stdout, as kubectl prints. note, when set, goes to stderr: what the dry run
// did not do.
func PrintDryRun(streams iostreams.IOStreams, out *OutputFlags, d DryRun, obj runtime.Object, operation, note string) error {
	if out != nil && !out.IsTable() {
		if err := out.PrintObject(obj, streams.Out); err != nil {
			return err
		}
	} else {
		mode := "dry run"
		if d.Server() {
			mode = "server dry run"
		}
		p := printers.NewTypeSetter(v1alpha1.NewScheme()).ToPrinter(NamePrinterFor(fmt.Sprintf("%s (%s)", operation, mode)))
		if err := p.PrintObj(obj, streams.Out); err != nil {
			return err
		}
	}
	if note != "" {
		fmt.Fprintln(streams.ErrOut, d.Note(note))
	}
	return nil
}
