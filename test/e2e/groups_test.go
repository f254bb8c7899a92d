package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The reasons a test gives serial.
const (
	clusterTrustPolicy      = "installs the trust policy, which the API server applies to every record of the cluster"
	initPlainPath           = "runs kubectl catalog init, which installs the trust policy the API server applies to every record of the cluster"
	reconcileEveryNamespace = "runs reconcile -A as the installed ServiceAccount, which would step other tests' records"
	retiredCatalogCRDs      = "installs the retired Service Catalog's CRDs, which every migrate svcat sees, or needs them absent"
	docsAsWritten           = "runs the documents' commands as written: kubectl catalog init, which installs the trust policy, and the namespaces they name (default, catalog-system, demo)"
)

// serialReasons are the constants serial is given, by name, and groups the group of
// each reason. The tests of a group run one after another, in a process of their own
// with a control plane of its own, beside every other test of the package (see
// startGroups).
var (
	serialReasons = map[string]string{
		"clusterTrustPolicy":      clusterTrustPolicy,
		"initPlainPath":           initPlainPath,
		"reconcileEveryNamespace": reconcileEveryNamespace,
		"retiredCatalogCRDs":      retiredCatalogCRDs,
		"docsAsWritten":           docsAsWritten,
	}
	groups = map[string]string{
		clusterTrustPolicy: "cluster-wide",
		initPlainPath:      "plain-path",
		// The README's quick start and the walkthrough are the plain path as a newcomer
		// types it.
		docsAsWritten: "plain-path",
		// reconcile -A's tests run beside migrate svcat's rather than the trust tests,
		// which are many: that group's process would otherwise end long after the others.
		reconcileEveryNamespace: "every-namespace",
		retiredCatalogCRDs:      "every-namespace",
	}
)

// envGroup names, in a group's process, the group it runs; envBinDir is
// where the parent process built the plugin.
const (
	envGroup  = "KUBECTL_CATALOG_E2E_GROUP"
	envBinDir = "KUBECTL_CATALOG_E2E_BIN_DIR"
)

// inGroupProcess reports whether this process runs one group of serial tests.
func inGroupProcess() bool { return os.Getenv(envGroup) != "" }

// serialTest is a test whose first statement is serial(t, reason).
type serialTest struct {
	name, reason string
}

// serialTests reads the package's test files for the tests that call serial first, and
// for the tests that call neither t.Parallel() nor serial first.
func serialTests() (serials []serialTest, missing []string, err error) {
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		return nil, nil, fmt.Errorf("no test files: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, nil, err
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			parallel, reason := firstStatement(fn, serialReasons)
			switch {
			case reason != "":
				serials = append(serials, serialTest{name: fn.Name.Name, reason: reason})
			case !parallel:
				missing = append(missing, fset.Position(fn.Pos()).String()+" "+fn.Name.Name)
			}
		}
	}
	return serials, missing, nil
}

// firstStatement says whether fn starts with t.Parallel(), or with serial(t, reason)
// and which reason (a string or one of consts).
func firstStatement(fn *ast.FuncDecl, consts map[string]string) (parallel bool, reason string) {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false, ""
	}
	stmt, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false, ""
	}
	call, ok := stmt.X.(*ast.CallExpr)
	if !ok {
		return false, ""
	}
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name == "Parallel" && len(call.Args) == 0, ""
	case *ast.Ident:
		if f.Name != "serial" || len(call.Args) != 2 {
			return false, ""
		}
		switch why := call.Args[1].(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(why.Value); err == nil && why.Kind == token.STRING {
				reason = s
			}
		case *ast.Ident:
			reason = consts[why.Name]
		}
		return false, strings.TrimSpace(reason)
	}
	return false, ""
}

// groupRun is one group's process.
type groupRun struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
	err  error
	done chan struct{}
}

// startGroups starts a process for each group of serial tests that -run selects, and
// makes this process skip every serial test. Each group's process is this test binary
// again, running the group's tests one after another on its own control plane: a test
// that changes what a whole cluster shares then neither waits for the others nor makes
// them wait. wait prints what each group's process printed and reports whether they all
// passed.
func startGroups() (wait func() bool, err error) {
	serials, _, err := serialTests()
	if err != nil {
		return nil, err
	}
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		return func() bool { return true }, nil
	}
	runTop, runRest := splitRun(flag.Lookup("test.run").Value.String())
	runRe, err := regexp.Compile(runTop)
	if err != nil {
		return nil, err
	}
	byGroup := map[string][]string{}
	var names, all []string
	for _, s := range serials {
		all = append(all, regexp.QuoteMeta(s.name))
		if !runRe.MatchString(s.name) {
			continue
		}
		group := groups[s.reason]
		if group == "" {
			group = s.reason
		}
		if byGroup[group] == nil {
			names = append(names, group)
		}
		byGroup[group] = append(byGroup[group], regexp.QuoteMeta(s.name))
	}
	passed := passedFlags()
	if len(all) > 0 {
		skip := "^(" + strings.Join(all, "|") + ")$"
		if user := flag.Lookup("test.skip").Value.String(); user != "" {
			skip = user + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			return nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	names, byGroup = splitGroups(names, byGroup)
	runs := groupRuns(self, names, byGroup, passed, runRest)
	// The parent-death signal goes with the thread that started a process, not with
	// the process: start them from a thread that lives as long as this process.
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked, and the goroutine never ends
		started <- startAll(runs)
		select {}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return func() bool {
		ok := true
		for _, g := range runs {
			<-g.done
			fmt.Printf("=== the %s tests, run one after another in a process of their own:\n", g.name)
			out := strings.TrimSuffix(g.out.String(), "PASS\n")
			fmt.Print(out)
			if g.err != nil {
				fmt.Printf("FAIL (the process of the %s tests: %v)\n", g.name, g.err)
				ok = false
			}
		}
		return ok
	}, nil
}

// groupProcesses is how many processes the tests of a group are divided among, each
// with a control plane of its own, for the groups that need more than one: the group
// whose tests, one after another, take longest ends the whole run, and most of a serial
// test's time is spent waiting (on role bindings and policies to take effect, on
// reconcile's runs), which a second process overlaps.
var groupProcesses = map[string]int{
	"cluster-wide":    2,
	"every-namespace": 2,
}

// serialSeconds is about how long the slowest serial tests take, in seconds (measured
// on a busy machine of 2 cores: go test -json ./test/e2e/); any other counts as
// defaultSerialSeconds. splitGroups balances the processes of a group by it.
var serialSeconds = map[string]int{
	"TestBounds_JunkRecordsWithMegabytesOfLabelsCostReconcileLittle":                       60,
	"TestEventsScope_AForbiddenEventInOneNamespaceLeavesTheOthersEvents":                   40,
	"TestEnvShape_TheOwnerOfASharedInstance_DoesNotChooseTheConsumersEnvironment":          31,
	"TestLimits_DocumentedRoles_MaxBindingsBelowTheBindingsThatExist_CountsEveryNamespace": 27,
	"TestXNS_TheCrossNamespaceRule":                                                        24,
	"TestIDsClaims_AClaimOutlivesTheDeletionOfItsRecord":                                   24,
	"TestIDsKeyed_ANamespaceCreatedAgainCannotUseTheOldOnesIDs":                            21,
	"TestTrustTarpits_SlowBrokersOfOneTenantStarveNobody":                                  19,
	"TestMigrateSvcat_MigratesThenReconcileAndVerbsFinishUnderTheOriginalIDs":              18,
	"TestTrust_DocumentedRoles_TwoUsersDoctorGraphAndCallsLeftToReconcile":                 17,
	"TestIDsWindow_AForgedStatusDoesNotBindAnotherTenantsUnclaimedID":                      17,
}

const defaultSerialSeconds = 10

// splitGroups divides each group of groupProcesses among its processes, named after the
// group ("cluster-wide", "cluster-wide 2", ...): its tests, slowest first (serialSeconds,
// then by name), each go to the process with the least time so far, and run there in
// the order serialTests found them. A process left without tests is not started.
func splitGroups(names []string, byGroup map[string][]string) ([]string, map[string][]string) {
	var outNames []string
	out := map[string][]string{}
	for _, group := range names {
		n := groupProcesses[group]
		tests := byGroup[group]
		if n < 2 || len(tests) < 2 {
			outNames = append(outNames, group)
			out[group] = tests
			continue
		}
		seconds := func(name string) int {
			if s, ok := serialSeconds[name]; ok {
				return s
			}
			return defaultSerialSeconds
		}
		order := slices.Clone(tests)
		slices.SortStableFunc(order, func(a, b string) int {
			if c := seconds(b) - seconds(a); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		load := make([]int, n)
		process := map[string]int{}
		for _, name := range order {
			i := slices.Index(load, slices.Min(load))
			process[name] = i
			load[i] += seconds(name)
		}
		for i := range n {
			name := group
			if i > 0 {
				name = fmt.Sprintf("%s %d", group, i+1)
			}
			var mine []string
			for _, test := range tests {
				if process[test] == i {
					mine = append(mine, test)
				}
			}
			if len(mine) > 0 {
				outNames = append(outNames, name)
				out[name] = mine
			}
		}
	}
	return outNames, out
}

// groupRuns are the processes of the groups names, each with its tests byGroup.
func groupRuns(self string, names []string, byGroup map[string][]string, passed []string, runRest string) []*groupRun {
	var runs []*groupRun
	for _, group := range names {
		run := "^(" + strings.Join(byGroup[group], "|") + ")$"
		if runRest != "" {
			run += "/" + runRest
		}
		g := &groupRun{name: group, done: make(chan struct{})}
		g.cmd = exec.Command(self, append(slices.Clone(passed), "-test.run="+run)...)
		g.cmd.Env = append(os.Environ(), envGroup+"="+group, envBinDir+"="+binDir)
		// One writer for both: exec then writes to it from one goroutine.
		g.cmd.Stdout, g.cmd.Stderr = &g.out, &g.out
		// The group's process and its control plane die with this one.
		g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		runs = append(runs, g)
	}
	return runs
}

// startAll starts the processes of runs.
func startAll(runs []*groupRun) error {
	for _, g := range runs {
		if err := g.cmd.Start(); err != nil {
			return fmt.Errorf("starting the process of the %s tests: %w", g.name, err)
		}
		go func() { g.err = g.cmd.Wait(); close(g.done) }()
	}
	return nil
}

// splitRun splits a -run pattern into its top-level part and the rest, at the first
// slash outside brackets and parentheses, as go test does.
func splitRun(pattern string) (top, rest string) {
	depth := 0
	for i, r := range pattern {
		switch r {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '/':
			if depth == 0 {
				return pattern[:i], pattern[i+1:]
			}
		}
	}
	return pattern, ""
}

// passedFlags are the go test flags a group's process takes over from this one: output,
// timeouts and selection, not the files go test asks this process to write.
func passedFlags() []string {
	var args []string
	for _, name := range []string{"test.v", "test.timeout", "test.count", "test.failfast", "test.short", "test.skip", "test.fullpath"} {
		if f := flag.Lookup(name); f != nil && flagSet(name) {
			args = append(args, "-"+name+"="+f.Value.String())
		}
	}
	return slices.DeleteFunc(args, func(a string) bool { return a == "-test.skip=" })
}
