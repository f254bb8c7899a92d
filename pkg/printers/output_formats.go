package printers

import (
	"slices"

	"github.com/spf13/cobra"
)

// fixedFormats is -o of a command that prints something other than records (a graph,
// a summary): a list of formats of its own, its help line, and its usage error.
type fixedFormats struct {
	formats []string
	def     string
	usage   string
	invalid func(format string) error
}

// NewFormatOutputFlags returns the -o flag of a command that prints something other
// than records: it accepts formats and def (the value without -o, listed in the help
// when not ""), usage is its help line, and invalid returns the usage error for any
// other value. The command prints in the chosen Format itself.
func NewFormatOutputFlags(formats []string, def, usage string, invalid func(format string) error) *OutputFlags {
	return &OutputFlags{Output: def, fixed: &fixedFormats{formats: formats, def: def, usage: usage, invalid: invalid}}
}

// Format is the value of -o: "" for the default of a command that prints records, and
// the default format of one made by NewFormatOutputFlags; "" for nil flags.
func (o *OutputFlags) Format() string {
	if o == nil {
		return ""
	}
	return o.value()
}

func (f *fixedFormats) addFlags(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", f.def, f.usage)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(f.formats, cobra.ShellCompDirectiveNoFileComp))
}

func (f *fixedFormats) validate(format string) error {
	if format == f.def || slices.Contains(f.formats, format) {
		return nil
	}
	return f.invalid(format)
}
