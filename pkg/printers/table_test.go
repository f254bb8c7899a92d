package printers

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

func TestTable_KubectlStyle(t *testing.T) {
	var b bytes.Buffer
	tbl := NewTable(&b, "name", "url", "status")
	tbl.Append("db-broker", "https://db.example.com", "Ready")
	tbl.Append("mq", "http://mq:8080", "")
	assert.NilError(t, tbl.Render())
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	assert.DeepEqual(t, lines, []string{
		"NAME        URL                      STATUS",
		"db-broker   https://db.example.com   Ready",
		"mq          http://mq:8080",
	})
}

func TestTable_NoRowsPrintsNothing(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, NewTable(&b, "name").Render())
	assert.Equal(t, b.String(), "")
}

// tablewriterRender is how tables were written before Render measured its columns
// itself: the output of Render must not change.
func tablewriterRender(t *Table) string {
	if len(t.rows) == 0 {
		return ""
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
			row[i] = iostreams.SafeLine(r[i])
		}
		if err := table.Append(row); err != nil {
			panic(err)
		}
	}
	if err := table.Render(); err != nil {
		panic(err)
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestTable_RendersAsTablewriterDid(t *testing.T) {
	for _, tc := range []struct {
		name      string
		headers   []string
		rows      [][]string
		noHeaders bool
	}{
		{name: "plain", headers: []string{"name", "url", "status"}, rows: [][]string{{"db-broker", "https://db.example.com", "Ready"}, {"mq", "http://mq:8080", ""}}},
		{name: "no headers", noHeaders: true, headers: []string{"name", "status"}, rows: [][]string{{"a", "Ready"}, {"bbbbbbbb", "Failed (x)"}}},
		{name: "header wider than cells", headers: []string{"namespace", "n"}, rows: [][]string{{"a", "b"}}},
		{name: "missing and extra cells", headers: []string{"a", "b", "c"}, rows: [][]string{{"1"}, {"1", "2", "3", "4"}, {}}},
		{name: "empty middle column", headers: []string{"a", "b", "c"}, rows: [][]string{{"x", "", "z"}, {"xx", "", ""}}},
		{name: "wide and combining characters", headers: []string{"name", "detail"}, rows: [][]string{{"日本語", "ü"}, {"ascii", "e\u0301t\u00e9"}, {"😀", "x"}}},
		{name: "cells to escape", headers: []string{"name", "detail"}, rows: [][]string{{"a\tb", "line\nbreak"}, {"\x1b[31mred", "\x7f"}}},
		{name: "spaces kept inside, trimmed at the end", headers: []string{"a", "b"}, rows: [][]string{{" lead", "trail  "}, {"in  side", " "}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(w *bytes.Buffer) *Table {
				var tbl *Table
				if tc.noHeaders {
					tbl = NewTable(headerless{w}, tc.headers...)
				} else {
					tbl = NewTable(w, tc.headers...)
				}
				for _, r := range tc.rows {
					tbl.Append(slices.Clone(r)...)
				}
				return tbl
			}
			var got bytes.Buffer
			want := tablewriterRender(mk(&bytes.Buffer{}))
			assert.NilError(t, mk(&got).Render())
			assert.Equal(t, got.String(), want)
		})
	}
}

// TestTable_ManyRowsRenderWithoutCopies: a table of every record of a large cluster
// (get instances -A) is written without building a copy of it per row.
func TestTable_ManyRowsRenderWithoutCopies(t *testing.T) {
	const rows = 20000
	tbl := NewTable(io.Discard, "namespace", "name", "class", "plan", "status", "age")
	for i := range rows {
		tbl.Append(fmt.Sprintf("team-%02d", i%10), fmt.Sprintf("db-%06d", i), "postgresql", "hobby", "Ready", "5m")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	assert.NilError(t, tbl.Render())
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Assert(t, allocated < 1<<20, "rendering %d rows allocated %d bytes, want under 1 MiB", rows, allocated)
}
