package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
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

// docSession runs one document's commands.
type docSession struct {
	t     *testing.T
	dir   string // where the commands run
	env   []string
	admin kubernetes.Interface
	st    *store.Store
	// asyncDelay is how long the test broker's async operations take.
	asyncDelay time.Duration
	broker     *broker.Broker
}

// docRun runs the blocks marked name of the document at path, line by line, as the
// administrator of the test's control plane. The broker's async operations take
// asyncDelay.
func docRun(t *testing.T, path, name string, asyncDelay time.Duration) {
	t.Helper()
	plan, err := docPlan(path, name)
	assert.NilError(t, err)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	meta, err := metadata.NewForConfig(cp.RESTConfig(controlplane.AdminUser))
	assert.NilError(t, err)
	s := &docSession{t: t, dir: t.TempDir(), env: environ(t, controlplane.AdminUser), admin: admin, st: store.New(admin, meta), asyncDelay: asyncDelay}
	for _, p := range plan {
		t.Logf("%s: %s (%s)", p.cmd.at, p.cmd, p.rule.does)
		if p.rule.run != nil {
			p.rule.run(s, p.cmd)
		}
	}
}

func (s *docSession) startBroker(c docCommand) {
	if s.broker != nil {
		s.t.Fatalf("%s: a second broker", c.at)
	}
	s.broker = broker.NewTestBroker(s.t, broker.Options{Username: "demo", Password: "demo", AsyncDelay: s.asyncDelay})
}

func (s *docSession) writeFile(c docCommand) {
	path := filepath.Join(s.dir, c.words[2])
	assert.NilError(s.t, os.WriteFile(path, []byte(c.heredoc), 0o644))
}

// docInterrupt is the note under a command that the reader presses Ctrl-C: `^C: exit
// code N, "TEXT"`, N its exit code and TEXT in what it prints.
var docInterrupt = regexp.MustCompile(`^\^C: exit code (\d+), "(.*)"$`)

// docInterruptOn is the start of the line after which the reader presses Ctrl-C: the
// walkthrough says to press it as soon as the provision says "Provisioning:" (the
// broker has accepted it and works on it).
const docInterruptOn = "Provisioning:"

// docStatusNote is the note under "get instances" of the status a row shows: "NAME:
// STATUS".
var docStatusNote = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*): ([A-Z]\w*)$`)

func (s *docSession) kubectl(c docCommand) {
	t := s.t
	t.Helper()
	args := slices.Clone(c.words[1:])
	for i, a := range args {
		if strings.Contains(a, docBrokerURL) {
			if s.broker == nil {
				t.Fatalf("%s: %s is used before the broker is started", c.at, docBrokerURL)
			}
			args[i] = strings.ReplaceAll(a, docBrokerURL, s.broker.URL())
		}
		if strings.Contains(args[i], "127.0.0.1:8080") {
			t.Fatalf("%s: only %s is mapped onto the test broker: %q", c.at, docBrokerURL, a)
		}
	}
	call := parseCatalogCall(args)
	var after func(out string)
	if check := docChecks[call.verb]; check != nil && call.catalog {
		after = check(s, c, call)
	}
	for _, n := range c.notes {
		if m := docInterrupt.FindStringSubmatch(n); m != nil {
			code, _ := strconv.Atoi(m[1])
			s.interrupted(c, args, code, m[2])
			return
		} else if strings.HasPrefix(n, "^C") {
			t.Fatalf("%s: the note %q does not say `^C: exit code N, \"WHAT IT PRINTS\"`", c.at, n)
		}
	}
	r := s.run(args)
	assert.Equal(t, r.ExitCode, 0, "%s: %s\n%s%s", c.at, c, r.Stdout, r.Stderr)
	if after != nil {
		after(r.Stdout + r.Stderr)
	}
	if call.catalog && call.verb == "get" && call.name == "instances" {
		for _, n := range c.notes {
			if m := docStatusNote.FindStringSubmatch(n); m != nil {
				assert.Check(t, tableStatus(r.Stdout, m[1]) == m[2], "%s: %s says %q has status %s:\n%s", c.at, c, m[1], m[2], r.Stdout)
			}
		}
	}
}

// run runs kubectl with args in the session's directory and environment.
func (s *docSession) run(args []string) result {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slow(commandTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.Binaries.Kubectl, args...)
	cmd.Env, cmd.Dir = s.env, s.dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		res.ExitCode = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("kubectl %s ran for more than %s", strings.Join(args, " "), slow(commandTimeout))
	}
	t.Logf("$ kubectl %s (exit %d)\n%s%s", strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
	return res
}

// interrupted runs kubectl with args and, once it prints docInterruptOn, sends SIGINT to
// its process group as a terminal's Ctrl-C does; it must then exit with code, having
// printed text.
func (s *docSession) interrupted(c docCommand, args []string, code int, text string) {
	t := s.t
	t.Helper()
	cmd := exec.Command(cp.Binaries.Kubectl, args...)
	cmd.Env, cmd.Dir = s.env, s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testio.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	assert.NilError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	instWaitFor(t, fmt.Sprintf("%s: kubectl %s to say %s", c.at, strings.Join(args, " "), docInterruptOn), 60*time.Second, func() bool {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, docInterruptOn) {
				return true
			}
		}
		select {
		case err := <-done:
			t.Fatalf("%s: %s ended (%v) before it said %s:\n%s", c.at, c, err, docInterruptOn, out.String())
		default:
		}
		return false
	})
	assert.NilError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	var err error
	select {
	case err = <-done:
	case <-time.After(slow(20 * time.Second)):
		t.Fatalf("%s: %s did not end after Ctrl-C:\n%s", c.at, c, out.String())
	}
	got := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		got = exitErr.ExitCode()
	}
	t.Logf("$ kubectl %s ^C (exit %d)\n%s", strings.Join(args, " "), got, out.String())
	assert.Check(t, got == code, "%s: %s: exit code %d after Ctrl-C, the document says %d", c.at, c, got, code)
	assert.Check(t, strings.Contains(out.String(), text), "%s: %s: after Ctrl-C it does not say %q:\n%s", c.at, c, text, out.String())
}

// catalogCall is what a "kubectl catalog ..." command asks for, as far as docChecks
// needs it.
type catalogCall struct {
	catalog bool // a kubectl catalog command
	verb    string
	name    string // the word after the verb, unless it is a flag
	ns      string // -n, or "default"
	all     bool   // -A
	args    []string
}

// parseCatalogCall reads kubectl's args.
func parseCatalogCall(args []string) catalogCall {
	c := catalogCall{ns: "default", args: args}
	if len(args) == 0 || args[0] != "catalog" {
		return c
	}
	c.catalog = true
	takesValue := map[string]bool{"-n": true, "--namespace": true, "--catalog-namespace": true, "--context": true, "--kubeconfig": true}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" || a == "--namespace":
			if i+1 < len(args) {
				c.ns = args[i+1]
			}
		case strings.HasPrefix(a, "--namespace=") || strings.HasPrefix(a, "-n="):
			c.ns = a[strings.Index(a, "=")+1:]
		case a == "-A" || a == "--all-namespaces":
			c.all = true
		case c.verb == "" && !strings.HasPrefix(a, "-") && !takesValue[args[i-1]]:
			c.verb = a
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				c.name = args[i+1]
			}
		}
	}
	return c
}

// has reports whether the call has one of the flags (also as --flag=VALUE).
func (c catalogCall) has(flags ...string) bool {
	return slices.ContainsFunc(c.args, func(a string) bool {
		name, _, _ := strings.Cut(a, "=")
		return slices.Contains(flags, name)
	})
}

// value is the flag's value, if the call has it.
func (c catalogCall) value(flag string) (string, bool) {
	for i, a := range c.args {
		if a == flag && i+1 < len(c.args) {
			return c.args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// docChecks check the outcome of the catalog's commands that change something: called
// before the command runs, each returns the check of its output and of the records once
// it exited 0.
var docChecks = map[string]func(s *docSession, c docCommand, call catalogCall) func(out string){
	// provision --wait: the instance is Ready.
	"provision": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		return func(string) {
			inst, err := s.st.Instances().Get(context.Background(), call.ns, call.name)
			assert.NilError(s.t, err, "%s: %s", c.at, c)
			assert.Check(s.t, inst.Status.Phase == v1alpha1.PhaseReady, "%s: %s: instance %s/%s is %s", c.at, c, call.ns, call.name, inst.Status.Phase)
		}
	},
	// bind: the binding's Secret exists.
	"bind": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if call.has("--rotate", "--dry-run") {
			return nil
		}
		name, ok := call.value("--name")
		if !ok {
			name = call.name[strings.LastIndex(call.name, "/")+1:]
		}
		return func(string) {
			b, err := s.st.Bindings().Get(context.Background(), call.ns, name)
			assert.NilError(s.t, err, "%s: %s", c.at, c)
			_, err = s.admin.CoreV1().Secrets(call.ns).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
			assert.Check(s.t, err, "%s: %s: the Secret %s/%s of binding %s", c.at, c, call.ns, b.Spec.SecretName, name)
		}
	},
	// unbind BINDING: its Secret is gone, and with --wait its record.
	"unbind": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if call.has("--all", "--name", "--dry-run") {
			return nil
		}
		b, err := s.st.Bindings().Get(context.Background(), call.ns, call.name)
		assert.NilError(s.t, err, "%s: %s", c.at, c)
		return func(string) {
			s.assertSecretGone(c, call.ns, b.Spec.SecretName)
			if call.has("--wait") {
				_, err := s.st.Bindings().Get(context.Background(), call.ns, call.name)
				assert.Check(s.t, store.IsNotFound(err), "%s: %s: binding %s/%s is still there: %v", c.at, c, call.ns, call.name, err)
			}
		}
	},
	// deprovision --yes --wait: the instance's record is gone, and its bindings and their
	// Secrets.
	"deprovision": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		bindings, err := s.st.Bindings().List(context.Background(), call.ns, store.Filter{})
		assert.NilError(s.t, err)
		bindings = slices.DeleteFunc(bindings, func(b *v1alpha1.ServiceBinding) bool {
			return b.Spec.InstanceName != call.name || (b.Spec.InstanceNamespace != "" && b.Spec.InstanceNamespace != call.ns)
		})
		return func(string) {
			_, err := s.st.Instances().Get(context.Background(), call.ns, call.name)
			assert.Check(s.t, store.IsNotFound(err), "%s: %s: instance %s/%s is still there: %v", c.at, c, call.ns, call.name, err)
			for _, b := range bindings {
				_, err := s.st.Bindings().Get(context.Background(), call.ns, b.Name)
				assert.Check(s.t, store.IsNotFound(err), "%s: %s: binding %s/%s is still there: %v", c.at, c, call.ns, b.Name, err)
				s.assertSecretGone(c, call.ns, b.Spec.SecretName)
			}
		}
	},
	// apply -f FILE --wait: every instance and binding the file names is Ready, and each
	// binding's Secret exists.
	"apply": func(s *docSession, c docCommand, call catalogCall) func(string) {
		file, ok := call.value("-f")
		if !ok || !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		return func(string) {
			for _, o := range s.manifestObjects(c, file, call.ns) {
				switch o.kind {
				case v1alpha1.KindServiceInstance:
					inst, err := s.st.Instances().Get(context.Background(), o.ns, o.name)
					assert.NilError(s.t, err, "%s: %s", c.at, c)
					assert.Check(s.t, inst.Status.Phase == v1alpha1.PhaseReady, "%s: %s: instance %s/%s is %s", c.at, c, o.ns, o.name, inst.Status.Phase)
				case v1alpha1.KindServiceBinding:
					b, err := s.st.Bindings().Get(context.Background(), o.ns, o.name)
					assert.NilError(s.t, err, "%s: %s", c.at, c)
					assert.Check(s.t, b.Status.Phase == v1alpha1.PhaseReady, "%s: %s: binding %s/%s is %s", c.at, c, o.ns, o.name, b.Status.Phase)
					_, err = s.admin.CoreV1().Secrets(o.ns).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
					assert.Check(s.t, err, "%s: %s: the Secret %s/%s of binding %s", c.at, c, o.ns, b.Spec.SecretName, o.name)
				}
			}
		}
	},
	// delete -f FILE --wait: every instance and binding the file names is gone, and each
	// binding's Secret.
	"delete": func(s *docSession, c docCommand, call catalogCall) func(string) {
		file, ok := call.value("-f")
		if !ok || !call.has("--wait") || call.has("--dry-run") {
			return nil
		}
		secrets := map[string]string{}
		objs := s.manifestObjects(c, file, call.ns)
		for _, o := range objs {
			if o.kind == v1alpha1.KindServiceBinding {
				b, err := s.st.Bindings().Get(context.Background(), o.ns, o.name)
				assert.NilError(s.t, err, "%s: %s", c.at, c)
				secrets[o.name] = b.Spec.SecretName
			}
		}
		return func(string) {
			for _, o := range objs {
				var err error
				switch o.kind {
				case v1alpha1.KindServiceInstance:
					_, err = s.st.Instances().Get(context.Background(), o.ns, o.name)
				case v1alpha1.KindServiceBinding:
					_, err = s.st.Bindings().Get(context.Background(), o.ns, o.name)
					s.assertSecretGone(c, o.ns, secrets[o.name])
				default:
					continue
				}
				assert.Check(s.t, store.IsNotFound(err), "%s: %s: %s %s/%s is still there: %v", c.at, c, o.kind, o.ns, o.name, err)
			}
		}
	},
	// reconcile (a run, not install or uninstall): it ends with nothing pending, in its
	// output and in the records of its namespaces.
	"reconcile": func(s *docSession, c docCommand, call catalogCall) func(string) {
		if call.name == "install" || call.name == "uninstall" || call.has("--dry-run", "-o", "--output") {
			return nil
		}
		return func(out string) {
			m := reconcileCounts.FindStringSubmatch(out)
			switch {
			case m == nil:
				assert.Check(s.t, strings.Contains(out, "Nothing to reconcile."), "%s: %s: neither a count of records nor \"Nothing to reconcile.\":\n%s", c.at, c, out)
			default:
				for _, part := range strings.Split(m[1], ", ") {
					assert.Check(s.t, strings.HasSuffix(part, " done"), "%s: %s ends with something pending: %q", c.at, c, m[0])
				}
			}
			ns := call.ns
			if call.all {
				ns = ""
			}
			pending, err := s.st.ListPending(context.Background(), ns)
			assert.NilError(s.t, err)
			assert.Check(s.t, len(pending) == 0, "%s: %s: records still have work: %+v", c.at, c, pending)
		}
	},
}

// docObject is a document of a manifest file: its kind, namespace and name.
type docObject struct{ kind, ns, name string }

// manifestObjects reads the documents of the manifest file the command names (in the
// directory the commands run in), namespace ns where a document names none.
func (s *docSession) manifestObjects(c docCommand, file, ns string) []docObject {
	data, err := os.ReadFile(filepath.Join(s.dir, file))
	assert.NilError(s.t, err, "%s: %s", c.at, c)
	var objs []docObject
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		assert.NilError(s.t, yaml.Unmarshal([]byte(doc), &m), "%s: %s", c.at, file)
		if m.Kind == "" {
			continue
		}
		o := docObject{kind: m.Kind, ns: m.Metadata.Namespace, name: m.Metadata.Name}
		if o.ns == "" {
			o.ns = ns
		}
		objs = append(objs, o)
	}
	assert.Assert(s.t, len(objs) > 0, "%s: %s names no object", c.at, file)
	return objs
}

// reconcileCounts is the line a reconcile run by hand ends with: "3 records: 2 done, 1
// failed".
var reconcileCounts = regexp.MustCompile(`(?m)^\d+ records: (.*?)(;.*)?$`)

func (s *docSession) assertSecretGone(c docCommand, ns, name string) {
	_, err := s.admin.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	assert.Check(s.t, apierrors.IsNotFound(err), "%s: %s: the Secret %s/%s is still there: %v", c.at, c, ns, name, err)
}

// tableStatus is the STATUS column of the row of name in a table kubectl catalog
// printed, "" when there is no such row.
func tableStatus(table, name string) string {
	sc := bufio.NewScanner(strings.NewReader(table))
	col := -1
	for sc.Scan() {
		line := sc.Text()
		if col < 0 {
			col = strings.Index(line, "STATUS")
			continue
		}
		if f := strings.Fields(line); len(f) > 0 && f[0] == name && len(line) > col {
			if f := strings.Fields(line[col:]); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// docCleanup removes, when t ends, what a document's commands leave in the namespaces it
// names: the trust policy that "kubectl catalog init" installed, the namespaces it
// created (without the finalizers of the records a failed run left), and the catalog's
// records and Secrets in the namespaces it only used. It waits until the namespaces are
// gone, so that the next test can create them again.
func docCleanup(t *testing.T, created, used []string) {
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		trustTakeDown(t, admin, "catalog-system")
		managed := metav1.ListOptions{LabelSelector: store.LabelManagedBy + "=" + store.ManagedBy}
		for _, ns := range append(slices.Clone(created), used...) {
			docReleaseFinalizers(admin, ns)
		}
		for _, ns := range used {
			_ = admin.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, managed)
			_ = admin.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, managed)
		}
		for _, ns := range created {
			_ = admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
		for _, ns := range created {
			instWaitFor(t, "namespace "+ns+" to be gone", 2*time.Minute, func() bool {
				_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
		}
	})
}

// docReleaseFinalizers drops the finalizers of the ConfigMaps and Secrets in ns.
func docReleaseFinalizers(admin kubernetes.Interface, ns string) {
	ctx := context.Background()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if cms, err := admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, cm := range cms.Items {
			if len(cm.Finalizers) > 0 {
				_, _ = admin.CoreV1().ConfigMaps(ns).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		}
	}
	if secrets, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, sec := range secrets.Items {
			if len(sec.Finalizers) > 0 {
				_, _ = admin.CoreV1().Secrets(ns).Patch(ctx, sec.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		}
	}
}
