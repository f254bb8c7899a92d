// Package printers prints records the way kubectl prints objects: a
// borderless table by default, and -o json|yaml|name|jsonpath|go-template
// through cli-runtime's printers.
package printers

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

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

// Append adds one row; missing cells are left empty.
func (t *Table) Append(cells ...string) {
	t.rows = append(t.rows, cells)
}

// Len is the number of rows appended.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table. A table without rows writes nothing: the caller
// says "No resources found" in its own words.
func (t *Table) Render() error {
	if len(t.rows) == 0 {
		return nil
	}
	var buf bytes.Buffer
	table := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off, ShowHeader: tw.Off, ShowFooter: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
			Symbols: tw.NewSymbols(tw.StyleNone),
		})),
		tablewriter.WithConfig(tablewriter.Config{
			Header: tw.CellConfig{
				Formatting: tw.CellFormatting{AutoFormat: tw.Off, AutoWrap: tw.WrapNone, Alignment: tw.AlignLeft},
				Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "   "}},
			},
			Row: tw.CellConfig{
				Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone, Alignment: tw.AlignLeft},
				Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "   "}},
			},
		}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	headers := make([]any, len(t.headers))
	for i, h := range t.headers {
		headers[i] = strings.ToUpper(h)
	}
	if !t.noHeaders {
		table.Header(headers...)
	}
	for _, r := range t.rows {
		row := make([]string, len(t.headers))
		for i := range min(len(r), len(row)) {
			// Cells hold names and messages others wrote: escaped for the terminal.
			row[i] = iostreams.SafeLine(r[i])
		}
		if err := table.Append(row); err != nil {
			return err
		}
	}
	if err := table.Render(); err != nil {
		return err
	}
	// The renderer pads the last column too; kubectl does not.
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(t.w, strings.Join(lines, "\n")+"\n")
	return err
}

// recordTable writes items as a table of records with the given headers: cells gives
// an item's namespace and cells, wideCells the cells -o wide adds under wideHeaders.
// withNamespace puts a NAMESPACE column first.
func recordTable[T any](w io.Writer, items []T, withNamespace, wide bool, headers, wideHeaders []string, cells func(*T) (string, []string), wideCells func(*T) []string) error {
	if withNamespace {
		headers = append([]string{"NAMESPACE"}, headers...)
	}
	if wide {
		headers = append(slices.Clip(headers), wideHeaders...)
	}
	t := NewTable(w, headers...)
	for i := range items {
		ns, row := cells(&items[i])
		if withNamespace {
			row = append([]string{ns}, row...)
		}
		if wide {
			row = append(row, wideCells(&items[i])...)
		}
		t.Append(row...)
	}
	return t.Render()
}
