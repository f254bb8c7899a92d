package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The command lines of README.md's quick start and of docs/walkthrough.md are read from
// the documents themselves and run as written (docs_test.go): a ```sh block is run when
// the line before its fence (blank lines aside) is the marker <!-- e2e: NAME -->. Each
// line of a block is either a kubectl command, run through the real kubectl, or one of
// the lines that set the local environment up, which docRules maps onto the harness's
// own (its control plane, the admin's kubeconfig, a test broker). A line no rule knows
// fails the test: a new line in the documents is either run or consciously mapped.

// docMarker is the HTML comment before a block that the tests run.
var docMarker = regexp.MustCompile(`^<!--\s*e2e:\s*(\S+)\s*-->$`)

// docBrokerURL is the broker's address in the documents; commands get the test
// broker's instead. Only this spelling is replaced.
const docBrokerURL = "http://127.0.0.1:8080"

// docLine is one line of a block, with where it is.
type docLine struct {
	at   string // FILE:LINE
	text string
}

// docBlock is one ```sh block of a document, with its marker's name ("" when unmarked).
type docBlock struct {
	marker string
	at     string
	lines  []docLine
}

// docBlocks reads the ```sh blocks of the document at path.
func docBlocks(path string) ([]docBlock, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	var blocks []docBlock
	marker := ""
	var cur *docBlock
	for i, text := range strings.Split(string(data), "\n") {
		at := fmt.Sprintf("%s:%d", name, i+1)
		trimmed := strings.TrimSpace(text)
		switch {
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, docLine{at: at, text: text})
		case strings.HasPrefix(trimmed, "```"):
			if trimmed == "```sh" {
				cur = &docBlock{marker: marker, at: at}
			} else if marker != "" {
				return nil, fmt.Errorf("%s: the e2e marker %q is followed by a %s block; only ```sh blocks are run", at, marker, trimmed)
			}
			marker = ""
		case docMarker.MatchString(trimmed):
			marker = docMarker.FindStringSubmatch(trimmed)[1]
		case trimmed != "" && marker != "":
			return nil, fmt.Errorf("%s: the e2e marker %q must come just before a ```sh fence", at, marker)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the ```sh block is not closed", cur.at)
	}
	return blocks, nil
}

// docCommand is one command of a block: its words as the shell splits them, and the
// comments on its line and on the comment lines after it.
type docCommand struct {
	at         string
	words      []string
	background bool   // ends with &
	heredoc    string // the here-document's text, for "<<WORD"
	notes      []string
}

// String is the command as the rules match it: its words joined by one space.
func (c docCommand) String() string {
	s := strings.Join(c.words, " ")
	if c.background {
		s += " &"
	}
	return s
}

// shellWord is a word of a shell line, or an operator (&&, &, >, <<, |, ;).
type shellWord struct {
	text string
	op   bool
	// expands: the word has unquoted characters a shell would expand ($, `, *, ?, [, ~,
	// {), which the tests do not.
	expands bool
}

// shellWords splits a logical line (continuations joined) as a POSIX shell does, quotes
// and backslashes included, and returns its words and its comment.
func shellWords(s string) (words []shellWord, comment string, err error) {
	var cur strings.Builder
	inWord, expands := false, false
	end := func() {
		if inWord {
			words = append(words, shellWord{text: cur.String(), expands: expands})
		}
		cur.Reset()
		inWord, expands = false, false
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t':
			end()
		case r == '#' && !inWord:
			end()
			return words, strings.TrimSpace(string(rs[i+1:])), nil
		case r == '\'':
			inWord = true
			j := slices.Index(rs[i+1:], '\'')
			if j < 0 {
				return nil, "", fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(string(rs[i+1 : i+1+j]))
			i += j + 1
		case r == '"':
			inWord = true
			closed := false
			for i++; i < len(rs); i++ {
				if rs[i] == '"' {
					closed = true
					break
				}
				if rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[i+1]) {
					i++
				} else if rs[i] == '$' || rs[i] == '`' {
					expands = true
				}
				cur.WriteRune(rs[i])
			}
			if !closed {
				return nil, "", fmt.Errorf("unterminated double quote")
			}
		case r == '\\':
			inWord = true
			if i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
			}
		case strings.ContainsRune("&|;<>()", r):
			end()
			op := string(r)
			if i+1 < len(rs) && rs[i+1] == r && strings.ContainsRune("&|<>;", r) {
				op += string(r)
				i++
			}
			words = append(words, shellWord{text: op, op: true})
		default:
			if strings.ContainsRune("$`*?[{", r) || (r == '~' && !inWord) {
				expands = true
			}
			inWord = true
			cur.WriteRune(r)
		}
	}
	end()
	return words, "", nil
}

// docCommands reads a block's lines into commands: continuation lines joined, a line's
// commands split at &&, here-documents taken with the command that reads them, and each
// comment line kept as a note of the command before it.
func docCommands(b docBlock) ([]docCommand, error) {
	var cmds []docCommand
	for i := 0; i < len(b.lines); i++ {
		at, text := b.lines[i].at, b.lines[i].text
		for strings.HasSuffix(text, `\`) && i+1 < len(b.lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + b.lines[i].text
		}
		words, comment, err := shellWords(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %s", at, err, text)
		}
		if len(words) == 0 {
			if comment != "" && len(cmds) > 0 {
				cmds[len(cmds)-1].notes = append(cmds[len(cmds)-1].notes, comment)
			}
			continue
		}
		c := docCommand{at: at}
		if comment != "" {
			c.notes = []string{comment}
		}
		var line []docCommand
		for j := 0; j < len(words); j++ {
			w := words[j]
			switch {
			case w.op && w.text == "&&":
				line = append(line, c)
				c = docCommand{at: at}
			case w.op && w.text == "&" && j == len(words)-1:
				c.background = true
			case w.op && w.text == "<<" && j+1 < len(words) && !words[j+1].op:
				delim := words[j+1].text
				c.words = append(c.words, "<<"+delim)
				j++
				var body []string
				for i++; i < len(b.lines) && strings.TrimSpace(b.lines[i].text) != delim; i++ {
					body = append(body, b.lines[i].text)
				}
				if i == len(b.lines) {
					return nil, fmt.Errorf("%s: the here-document's end %q is missing", at, delim)
				}
				c.heredoc = strings.Join(body, "\n") + "\n"
			case w.op && w.text != ">":
				return nil, fmt.Errorf("%s: the tests run no %q (pipes, lists and redirections other than && and a here-document into a file): %s", at, w.text, text)
			case w.expands && !strings.HasPrefix(text, "export "):
				return nil, fmt.Errorf("%s: the tests expand no variables, globs or substitutions (%q): %s", at, w.text, text)
			default:
				c.words = append(c.words, w.text)
			}
		}
		if len(c.words) == 0 {
			return nil, fmt.Errorf("%s: an empty command: %s", at, text)
		}
		cmds = append(cmds, append(line, c)...)
	}
	return cmds, nil
}

// docRule maps the command lines its pattern matches onto what the test does.
type docRule struct {
	match *regexp.Regexp
	// does says what the test does for such a line, and why.
	does string
	run  func(s *docSession, c docCommand)
	// runs: the rule runs the command itself, which then may not be put in the
	// background, redirect its output or read a here-document.
	runs bool
}

// docRules is every kind of line the documents' blocks may hold. The lines that set the
// local environment up map onto the harness's equivalents; kubectl commands run.
var docRules = []docRule{
	{match: regexp.MustCompile(`^make cluster-up$`),
		does: "nothing: the test's control plane is already up (TestMain)"},
	{match: regexp.MustCompile(`^export PATH=`),
		does: "nothing: commands run with the plugin under test first on PATH, then the control plane's kubectl (environ)"},
	{match: regexp.MustCompile(`^export KUBECONFIG=\S*/kubeconfig-admin$`),
		does: "nothing: commands run with the control plane's kubeconfig of the administrator (environ)"},
	{match: regexp.MustCompile(`^make broker( &)?$`),
		does: "starts the project's test broker with its demo catalog on a free port, user and password demo; " + docBrokerURL + " in the commands becomes its URL",
		run:  (*docSession).startBroker},
	{match: regexp.MustCompile(`^cat > [\w.-]+ <<\S+$`),
		does: "writes the here-document into the file, in the directory the commands run in",
		run:  (*docSession).writeFile},
	{match: regexp.MustCompile(`^kubectl( |$)`),
		does: "run through the real kubectl (plugin discovery and all): exit 0, its outcome checked (docChecks)",
		run:  (*docSession).kubectl, runs: true},
	{match: regexp.MustCompile(`^make cluster-down$`),
		does: "nothing: what the test made is removed when it ends (docCleanup)"},
}

// docPlanned is a command and the rule it runs by.
type docPlanned struct {
	cmd  docCommand
	rule docRule
}

// docPlan reads the blocks marked name of the document at path and finds each
// command's rule; a command no rule matches is an error naming it.
func docPlan(path, name string) ([]docPlanned, error) {
	blocks, err := docBlocks(path)
	if err != nil {
		return nil, err
	}
	var plan []docPlanned
	found := false
	for _, b := range blocks {
		if b.marker != name {
			continue
		}
		found = true
		cmds, err := docCommands(b)
		if err != nil {
			return nil, err
		}
		for _, c := range cmds {
			i := slices.IndexFunc(docRules, func(r docRule) bool { return r.match.MatchString(c.String()) })
			if i < 0 {
				return nil, fmt.Errorf("%s: no rule of docRules (test/e2e/helpers_docs_test.go) knows the line %q: run it (a kubectl command) or map it onto the harness there", c.at, c.String())
			}
			if docRules[i].runs && (c.background || c.heredoc != "" || slices.Contains(c.words, ">")) {
				return nil, fmt.Errorf("%s: the tests run %q only as a command of its own, not in the background, redirected or reading a here-document", c.at, c.String())
			}
			plan = append(plan, docPlanned{cmd: c, rule: docRules[i]})
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no ```sh block is marked <!-- e2e: %s -->", path, name)
	}
	return plan, nil
}
