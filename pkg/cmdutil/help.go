package cmdutil

import "strings"

// Examples formats an indented block of examples for cobra's Example field:
// blank lines at the ends are dropped and every line is indented by two
// spaces, whatever indentation the source used.
func Examples(s string) string {
	lines := trimBlankLines(strings.Split(s, "\n"))
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" {
			l = "  " + l
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// LongDesc formats a long description: surrounding blank lines are dropped
// and the tab indentation of a raw string literal is removed.
func LongDesc(s string) string {
	lines := trimBlankLines(strings.Split(s, "\n"))
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "\n")
}

func trimBlankLines(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
