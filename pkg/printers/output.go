package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
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
		return iostreams.UsageErrorf("--output %q: %v", o.value(), shorten(err))
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
		return iostreams.UsageErrorf("--output %q: %v", o.value(), shorten(err))
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

// PrintRecords prints records in the chosen non-table format as kubectl get prints
// objects: the record itself when one name was asked for and one record found (one is
// true), else a List (apiVersion v1, kind List) of them. Either shape can be fed back to
// "kubectl catalog apply -f".
func (o *OutputFlags) PrintRecords(items []runtime.Object, one bool, w io.Writer) error {
	if one && len(items) == 1 {
		return o.PrintObject(items[0], w)
	}
	list, err := NewList(items)
	if err != nil {
		return err
	}
	return o.PrintObject(list, w)
}

// Objects returns pointers to items as objects, for PrintRecords.
func Objects[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	objs := make([]runtime.Object, len(items))
	for i := range items {
		objs[i] = P(&items[i])
	}
	return objs
}

// NewList returns items as a List (apiVersion v1, kind List), each item with its
// apiVersion and kind.
func NewList(items []runtime.Object) (*metav1.List, error) {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{}}
	scheme := v1alpha1.NewScheme()
	for _, item := range items {
		if item.GetObjectKind().GroupVersionKind().Empty() {
			item = item.DeepCopyObject()
			gvks, _, err := scheme.ObjectKinds(item)
			if err != nil {
				return nil, err
			}
			item.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		raw, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: raw, Object: item})
	}
	return list, nil
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
