package printers

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// PrintData prints v, a report that is not a record (doctor's checks, reconcile's
// summary), as JSON (indented as -o json indents records) or YAML. format is "json" or
// "yaml"; the caller has checked it.
func PrintData(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("internal error: PrintData called for format %q", format)
}
