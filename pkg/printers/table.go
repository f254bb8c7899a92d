// Package printers prints records the way kubectl prints objects: a
// borderless table by default, and -o json|yaml|name|jsonpath|go-template
// through cli-runtime's printers.
package printers

import (
	"bufio"
	"bytes"
	"cmp"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

// Table writes rows in kubectl's style: upper-case headers, left-aligned
// columns separated by three spaces, no borders, no wrapping.
type Table struct {
	w         io.Writer
	headers   []string
	rows      [][]string
	noHeaders bool
}

// NewTable returns a table with the given column headers. On a writer from
// ListFlags.Out with --no-headers, the table has no header row.
func NewTable(w io.Writer, headers ...string) *Table {
	if h, ok := w.(headerless); ok {
		return &Table{w: h.Writer, headers: headers, noHeaders: true}
	}
	return &Table{w: w, headers: headers}
}

// Append adds one row; missing cells are left empty. Cells hold names and messages
// others wrote: they are kept escaped for the terminal (cells is not modified).
func (t *Table) Append(cells ...string) {
	copied := false
	for i, c := range cells {
		if safe := iostreams.SafeLine(c); safe != c {
			if !copied {
				cells, copied = slices.Clone(cells), true
			}
			cells[i] = safe
		}
	}
	t.rows = append(t.rows, cells)
}

// Len is the number of rows appended.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table. A table without rows writes nothing: the caller
// says "No resources found" in its own words.
//
// Each column is as wide as its widest cell (its display width: a wide character
// counts two) and is followed by three spaces; trailing spaces are trimmed, as
// kubectl prints. It makes two passes over the rows and builds no copy of them, so
// a table of 100,000 rows costs little more than the rows themselves.
func (t *Table) Render() error {
	if len(t.rows) == 0 {
		return nil
	}
	n := len(t.headers)
	widths := make([]int, n)
	header := make([]string, n)
	for i, h := range t.headers {
		header[i] = strings.ToUpper(h)
		if !t.noHeaders {
			widths[i] = cellWidth(header[i])
		}
	}
	for _, r := range t.rows {
		for i := range min(len(r), n) {
			widths[i] = max(widths[i], cellWidth(r[i]))
		}
	}
	w := bufio.NewWriterSize(t.w, 64<<10)
	var line []byte
	write := func(cells []string) error {
		line = line[:0]
		for i := range n {
			cell := ""
			if i < len(cells) {
				cell = cells[i]
			}
			line = append(line, cell...)
			if i < n-1 {
				for range widths[i] - cellWidth(cell) + len(columnGap) {
					line = append(line, ' ')
				}
			}
		}
		line = append(bytes.TrimRight(line, " "), '\n')
		_, err := w.Write(line)
		return err
	}
	if !t.noHeaders {
		if err := write(header); err != nil {
			return err
		}
	}
	for _, r := range t.rows {
		if err := write(r); err != nil {
			return err
		}
	}
	return w.Flush()
}

// cellWidth is the display width of an escaped cell: its length when it is ASCII (the
// common case, without a lookup), else as the terminal shows it.
func cellWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return twwidth.Width(s)
		}
	}
	return len(s)
}

// columnGap is what separates two columns.
const columnGap = "   "

// recordTable writes items as a table of records with the given headers: cells gives
// an item's namespace and cells, wideCells the cells -o wide adds under wideHeaders.
// withNamespace puts a NAMESPACE column first.
func recordTable[T any](w io.Writer, items []T, withNamespace, wide bool, headers, wideHeaders []string, cells func(*T) (string, []string), wideCells func(*T) []string) error {
	r := newRows(w, withNamespace, wide, headers, wideHeaders, cells, wideCells)
	r.Add(items...)
	return r.Render()
}

// Rows is a table of records filled a page of records at a time (InstanceRows,
// BindingRows): each record's row is made when it is added, and the record need not be
// kept. Render writes the rows in the order added, or by namespace and name after
// SortByNamespace.
type Rows[T any] struct {
	t               *Table
	withNamespace   bool
	wide            bool
	cells           func(*T) (string, []string)
	wideCells       func(*T) []string
	keys            []rowKey
	sortByNamespace bool
}

// rowKey is a row's record: its namespace and name.
type rowKey struct{ namespace, name string }

func newRows[T any](w io.Writer, withNamespace, wide bool, headers, wideHeaders []string, cells func(*T) (string, []string), wideCells func(*T) []string) *Rows[T] {
	if withNamespace {
		headers = append([]string{"NAMESPACE"}, headers...)
	}
	if wide {
		headers = append(slices.Clip(headers), wideHeaders...)
	}
	return &Rows[T]{t: NewTable(w, headers...), withNamespace: withNamespace, wide: wide, cells: cells, wideCells: wideCells}
}

// Add adds a row for each item.
func (r *Rows[T]) Add(items ...T) {
	for i := range items {
		r.add(&items[i])
	}
}

// AddPointers adds a row for each item, as Add.
func (r *Rows[T]) AddPointers(items ...*T) {
	for _, x := range items {
		r.add(x)
	}
}

func (r *Rows[T]) add(x *T) {
	ns, row := r.cells(x)
	if r.sortByNamespace {
		r.keys = append(r.keys, rowKey{ns, row[0]})
	}
	if r.withNamespace {
		row = append([]string{ns}, row...)
	}
	if r.wide {
		row = append(row, r.wideCells(x)...)
	}
	r.t.Append(row...)
}

// SortByNamespace makes Render write the rows by namespace, then by name (the first
// cell), whatever the order they were added in. Call it before Add.
func (r *Rows[T]) SortByNamespace() { r.sortByNamespace = true }

// Len is the number of rows added.
func (r *Rows[T]) Len() int { return r.t.Len() }

// Reset forgets the rows added.
func (r *Rows[T]) Reset() { r.t.rows, r.keys = nil, nil }

// Render writes the table (nothing when no row was added).
func (r *Rows[T]) Render() error {
	if r.sortByNamespace && !slices.IsSortedFunc(r.keys, compareRowKeys) {
		order := make([]int, len(r.keys))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return compareRowKeys(r.keys[a], r.keys[b]) })
		rows := make([][]string, len(order))
		for i, j := range order {
			rows[i] = r.t.rows[j]
		}
		r.t.rows = rows
	}
	return r.t.Render()
}

func compareRowKeys(a, b rowKey) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}
