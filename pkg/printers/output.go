package printers

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// OutputFlags is the -o flag of every command that prints records: a table
// by default ("wide" adds columns where the command has them), or any of
// cli-runtime's formats (json, yaml, name, jsonpath=..., go-template=...).
type OutputFlags struct {
	// Output is the value of -o.
	Output    string
	allowWide bool
	print     *genericclioptions.PrintFlags
	// fixed, when set, is the command's own list of formats (NewFormatOutputFlags).
	fixed *fixedFormats
}

// NewOutputFlags returns output flags; allowWide says whether -o wide exists.
func NewOutputFlags(allowWide bool) *OutputFlags {
	return &OutputFlags{
		allowWide: allowWide,
		print:     genericclioptions.NewPrintFlags("").WithTypeSetter(v1alpha1.NewScheme()),
	}
}

// OutputFlagsFor returns output flags as a command without -o wide has them
// after parsing "-o format" ("" for no -o): for code, tests mostly, that builds
// a command's options without cobra. The format is checked by Validate, as it
// is for a parsed command.
func OutputFlagsFor(format string) *OutputFlags {
	o := NewOutputFlags(false)
	if format != "" {
		cmd := &cobra.Command{}
		o.AddFlags(cmd)
		_ = cmd.Flags().Set("output", format) // a string flag: Set cannot fail
	}
	return o
}

// AddFlags adds -o/--output (and the template flags) to cmd.
func (o *OutputFlags) AddFlags(cmd *cobra.Command) {
	if o.fixed != nil {
		o.fixed.addFlags(cmd, &o.Output)
		return
	}
	o.print.AddFlags(cmd)
	// PrintFlags registers -o itself; take it over so one field holds it
	// and the help lists the formats this command has.
	f := cmd.Flags().Lookup("output")
	f.Usage = "Output format. One of: (" + strings.Join(o.formats(), ", ") + ")."
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return o.formats(), cobra.ShellCompDirectiveNoFileComp
	})
}

func (o *OutputFlags) formats() []string {
	f := o.print.AllowedFormats()
	if o.allowWide {
		f = append([]string{"wide"}, f...)
	}
	return f
}

func (o *OutputFlags) value() string {
	if o.fixed != nil {
		return o.Output
	}
	if o.print.OutputFormat == nil {
		return ""
	}
	return *o.print.OutputFormat
}

// IsTable reports whether the output is a table (the default, or wide).
func (o *OutputFlags) IsTable() bool { v := o.value(); return v == "" || (v == "wide" && o.allowWide) }

// IsName reports whether -o name was asked for.
func (o *OutputFlags) IsName() bool { return o.value() == "name" }

// IsWide reports whether -o wide was asked for.
func (o *OutputFlags) IsWide() bool { return o.allowWide && o.value() == "wide" }

// Validate checks the format before anything is done, so a typo in -o never
// leaves a half-finished command behind.
func (o *OutputFlags) Validate() error {
	if o.fixed != nil {
		return o.fixed.validate(o.Output)
	}
	if o.IsTable() {
		return nil
	}
	if _, err := o.print.ToPrinter(); err != nil {
		return cmdutil.UsageErrorf("--output %q: %v", o.value(), shorten(err))
	}
	return nil
}

func shorten(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// PrintObject prints obj (a record or a list of records) in the chosen
// non-table format.
func (o *OutputFlags) PrintObject(obj runtime.Object, w io.Writer) error {
	if o.IsTable() {
		return fmt.Errorf("internal error: PrintObject called for table output")
	}
	p, err := o.print.ToPrinter()
	if err != nil {
		return cmdutil.UsageErrorf("--output %q: %v", o.value(), shorten(err))
	}
	// -o name prints one line per item; the others print the list whole.
	if o.value() == "name" {
		if items, ok := listItems(obj); ok {
			for _, item := range items {
				if err := p.PrintObj(item, w); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return p.PrintObj(obj, w)
}

// NamePrinterFor is cli-runtime's name printer for an operation ("created",
// "deleted", ...), used by commands that report what they did.
func NamePrinterFor(operation string) printers.ResourcePrinter {
	return &printers.NamePrinter{Operation: operation}
}

func listItems(obj runtime.Object) ([]runtime.Object, bool) {
	if !strings.HasSuffix(fmt.Sprintf("%T", obj), "List") {
		return nil, false
	}
	items, err := meta.ExtractList(obj)
	return items, err == nil
}

// Formats lists every -o value a command with wide support accepts.
func Formats() []string { return slices.Clone(NewOutputFlags(true).formats()) }
