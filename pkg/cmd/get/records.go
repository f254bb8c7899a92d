package get

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/watchrecords"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// RecordListOptions are the options "get instances" and "get bindings" share.
type RecordListOptions struct {
	Names         []string
	AllNamespaces bool
	Output        *printers.OutputFlags
	List          printers.ListFlags
	Watch         watchrecords.Flags

	// Namespace is the namespace listed, "" with -A.
	Namespace string
	Reader    *records.Reader
	Streams   cmdutil.IOStreams
	Now       func() time.Time

	watcher *records.Watcher // to watch with
}

func newRecordListOptions(f *cmdutil.Factory) RecordListOptions {
	return RecordListOptions{Streams: f.IOStreams, Output: printers.NewOutputFlags(true), Now: f.Now}
}

// watchHelp is the paragraph of a get command's help that says what -w does, for records
// of which one is called one ("a broker").
func watchHelp(one string) string {
	return `
		With -w (--watch), after the list it prints a row, with the same columns,
		each time ` + one + ` changes or is deleted, until interrupted;
		--watch-only prints only the changes. With -o json|yaml it prints one
		object per change.`
}

// addFlags adds -A, the watch and list flags and -o, for the records listed (plural:
// "instances").
func (o *RecordListOptions) addFlags(cmd *cobra.Command, plural string) {
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List "+plural+" of every namespace.")
	o.Watch.AddFlags(cmd.Flags(), plural)
	o.List.AddWatchedFlags(cmd, plural)
	o.Output.AddFlags(cmd)
}

// Validate checks the flags without any I/O; it changes nothing.
func (o *RecordListOptions) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	return validateList(o.List)
}

// Complete builds the reader (and the client to watch with) and finds the namespace.
func (o *RecordListOptions) Complete(f *cmdutil.Factory, args []string) error {
	o.Names = args
	if err := o.List.Validate(); err != nil {
		return err
	}
	r, ns, err := f.ReaderIn()
	if err != nil {
		return err
	}
	if o.AllNamespaces {
		ns = ""
	}
	o.Namespace, o.Reader = ns, r
	if o.Watch.On() {
		if o.watcher, err = f.Watcher(); err != nil {
			return err
		}
	}
	return nil
}

// where is the namespace listed, as the message of an empty list says it.
func (o *RecordListOptions) where() string {
	if o.AllNamespaces {
		return "in any namespace"
	}
	return fmt.Sprintf("in namespace %q", o.Namespace)
}

// keep reports whether get prints a record of this name: any without names.
func (o *RecordListOptions) keep() func(name string) bool {
	want := map[string]bool{}
	for _, n := range o.Names {
		want[n] = true
	}
	return func(name string) bool { return len(want) == 0 || want[name] }
}

// recordKind is what listing and watching one kind of record needs.
type recordKind[T any, P recordPtr[T]] struct {
	name   string // "instance"
	record string // its Kind, for the watch's selector
	// list lists the records of the filter; it may return some with an error.
	list func(ctx context.Context, namespace string, f records.Filter) ([]P, error)
	// table prints the items as a table.
	table func(w io.Writer, items []T, withNamespace, wide bool, now time.Time) error
	// pages and rows, when set, make the table a page of records at a time, keeping
	// the rows and not the records (printTableByPages).
	pages func(ctx context.Context, namespace string, f records.Filter, page func(items []P, bad []error) error, restart func()) error
	rows  func(w io.Writer, withNamespace, wide bool, now time.Time) *printers.Rows[T]
}

// runRecords lists the records of k that filter selects, or watches them with -w;
// none is the message of an empty list.
func runRecords[T any, P recordPtr[T]](ctx context.Context, o *RecordListOptions, filter records.Filter, k recordKind[T, P], none func() string) error {
	if o.Watch.On() {
		return watchRecords(ctx, o, k, filter)
	}
	return printRecords(ctx, o, k, filter, none)
}

// print prints items as the table of k, with the columns o asks for.
func (k recordKind[T, P]) print(o *RecordListOptions, w io.Writer, items []T) error {
	return k.table(w, items, o.AllNamespaces, o.Output.IsWide(), o.Now())
}

type recordPtr[T any] interface {
	*T
	v1alpha1.Record
}

// listRecords lists the records of k that get prints: all, or those o names; missing
// names the names that matched none (nil when all did).
func listRecords[T any, P recordPtr[T]](ctx context.Context, o *RecordListOptions, k recordKind[T, P], filter records.Filter) (items []T, missing, err error) {
	list, err := k.list(ctx, o.Namespace, filter)
	if err != nil && len(list) == 0 {
		return nil, nil, err
	}
	keep := o.keep()
	found := map[string]bool{}
	var known []string
	for _, x := range list {
		known = append(known, x.GetName())
		if keep(x.GetName()) {
			found[x.GetName()] = true
			items = append(items, *x)
		}
	}
	return items, allMissing(k.name, o.Names, found, known), nil
}

// printRecords lists the records of k and prints them, sorted: as one list object with
// -o json|yaml, else as a table, or none says on standard error that there are none.
// It fails, after printing, for the names that matched nothing.
func printRecords[T any, P recordPtr[T]](ctx context.Context, o *RecordListOptions, k recordKind[T, P], filter records.Filter, none func() string) error {
	if o.Output.IsTable() && o.List.SortBy == "" && k.pages != nil && k.rows != nil {
		return printTableByPages(ctx, o, k, filter, none)
	}
	items, missing, err := listRecords(ctx, o, k, filter)
	if err != nil {
		return err
	}
	if err := printers.SortItems(&o.List, items, func(x *T) runtime.Object { return P(x) }); err != nil {
		return err
	}
	if !o.Output.IsTable() {
		if err := o.Output.PrintRecords(printers.Objects[T, P](items), len(o.Names) == 1, o.Streams.Out); err != nil {
			return err
		}
		return missing
	}
	if len(items) == 0 {
		if missing != nil {
			return missing
		}
		fmt.Fprintln(o.Streams.ErrOut, none())
		return nil
	}
	if err := k.print(o, o.List.Out(o.Streams.Out), items); err != nil {
		return err
	}
	return missing
}

// printTableByPages is printRecords's table, sorted by namespace and name: it makes each
// record's row as the record's page is read and keeps the rows, not the records, as
// kubectl keeps the rows of the tables the API server sends. Every namespace's records
// (get -A of a large cluster) then take the memory of their rows, a fraction of theirs.
func printTableByPages[T any, P recordPtr[T]](ctx context.Context, o *RecordListOptions, k recordKind[T, P], filter records.Filter, none func() string) error {
	rows := k.rows(o.List.Out(o.Streams.Out), o.AllNamespaces, o.Output.IsWide(), o.Now())
	rows.SortByNamespace()
	keep := o.keep()
	var (
		found  map[string]bool
		known  [][2]string // namespace and name, for the suggestions of a name not found
		bad    []error
		listed int
	)
	restart := func() { rows.Reset(); found, known, bad, listed = map[string]bool{}, nil, nil, 0 }
	restart()
	err := k.pages(ctx, o.Namespace, filter, func(items []P, unreadable []error) error {
		for _, x := range items {
			listed++
			if len(o.Names) > 0 {
				known = append(known, [2]string{x.GetNamespace(), x.GetName()})
			}
			if keep(x.GetName()) {
				found[x.GetName()] = true
				rows.AddPointers((*T)(x))
			}
		}
		bad = append(bad, unreadable...)
		return nil
	}, restart)
	if err != nil {
		return err
	}
	if listed == 0 && len(bad) > 0 {
		// As List: the records that do not decode hide no other, and fail the command
		// only when there is no other.
		return errors.Join(bad...)
	}
	slices.SortFunc(known, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	names := make([]string, len(known))
	for i, n := range known {
		names[i] = n[1]
	}
	missing := allMissing(k.name, o.Names, found, names)
	if rows.Len() == 0 {
		if missing != nil {
			return missing
		}
		fmt.Fprintln(o.Streams.ErrOut, none())
		return nil
	}
	if err := rows.Render(); err != nil {
		return err
	}
	return missing
}

// watchRecords lists the records get would list, then prints each change.
func watchRecords[T any, P recordPtr[T]](ctx context.Context, o *RecordListOptions, k recordKind[T, P], filter records.Filter) error {
	if o.watcher == nil {
		return fmt.Errorf("internal error: no client to watch with")
	}
	sel, err := records.Selector(k.record, filter)
	if err != nil {
		return err
	}
	keep := o.keep()
	return watchrecords.Watch(ctx, o.watcher, []watchrecords.Source{{Namespace: o.Namespace, Selector: sel}}, watchrecords.Printing[P]{
		Out: o.List.Out(o.Streams.Out), Output: o.Output, List: &o.List, WatchOnly: o.Watch.WatchOnly,
		Keep: func(x P) bool { return keep(x.GetName()) },
		Table: func(w io.Writer, items []P) error {
			vals := make([]T, len(items))
			for i, x := range items {
				vals[i] = *x
			}
			return k.print(o, w, vals)
		},
	}, nil)
}
