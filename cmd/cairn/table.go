package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// table lays out tab-separated cells in aligned columns, like
// text/tabwriter (padding 2, blanks), except that ANSI colour sequences
// take no width: a coloured status is padded by what a terminal shows,
// not by its bytes. Lines are written to it whole (text ending in '\n');
// Flush prints them.
type table struct {
	out io.Writer
	buf bytes.Buffer
}

// tablePadding is the blanks between two columns.
const tablePadding = 2

// ansiRE matches the ANSI CSI sequences (colours, clear line) the CLI
// prints.
var ansiRE = regexp.MustCompile("\033\\[[0-9;]*[A-Za-z]")

func newTable(w io.Writer) *table { return &table{out: w} }

func (t *table) Write(p []byte) (int, error) { return t.buf.Write(p) }

// visibleWidth is how many columns s takes on a terminal.
func visibleWidth(s string) int { return utf8.RuneCountInString(ansiRE.ReplaceAllString(s, "")) }

// Flush writes the lines written so far, aligned: every cell but a
// line's last is padded to its column's widest cell plus tablePadding.
func (t *table) Flush() error {
	text := t.buf.String()
	t.buf.Reset()
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	rows := make([][]string, len(lines))
	var widths []int
	for i, l := range lines {
		rows[i] = strings.Split(l, "\t")
		for j, c := range rows[i][:len(rows[i])-1] {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], visibleWidth(c))
		}
	}
	var b strings.Builder
	for _, cells := range rows {
		last := len(cells) - 1
		for j, c := range cells[:last] {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[j]-visibleWidth(c)+tablePadding))
		}
		b.WriteString(cells[last])
		b.WriteByte('\n')
	}
	_, err := io.WriteString(t.out, b.String())
	return err
}
