// Package e2e runs kubectl-catalog end to end: the real binary, discovered
// by a real kubectl, against a real kube-apiserver, etcd and
// kube-controller-manager with RBAC on.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	reconcilecmd "github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// binDir holds kubectl-catalog and a link to kubectl; it goes first on
	// PATH so plugin discovery finds the binary under test.
	binDir string
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The tests mostly wait (on the API server, the broker, the plugin's processes):
	// run more of them at once than go test's default of one per CPU, unless -parallel
	// says otherwise.
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}
	// The tests' brokers listen on loopback, which reconcile's egress rule denies to
	// namespace-scoped brokers: the tests' reconcile runs allow it, as an administrator
	// running a broker on reconcile's host would (test/e2e/egress_test.go takes it back).
	if err := os.Setenv(reconcilecmd.NamespaceBrokerAllowEnv, "127.0.0.0/8"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(run(m))
}

// defaultParallel is how many tests run at once by default (see TestMain).
const defaultParallel = 8

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func run(m *testing.M) int {
	if inGroupProcess() {
		// A group of serial tests, started by the package's main process (startGroups):
		// the plugin is built, and this process runs the group on its own control plane.
		binDir = os.Getenv(envBinDir)
		versionedBuild.err = fmt.Errorf("the release-stamped build is made only in the main process; run this test beside the others (t.Parallel)")
		done := make(chan struct{})
		close(done)
		versionedBuild.done = done
		defer printCommandsCPU()
		return controlplane.RunMain(m, &cp)
	}
	dir, err := os.MkdirTemp("", "kubectl-catalog-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if _, err := controlplane.BuildPlugin(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	// The tests that change what the whole cluster shares run in processes of their
	// own, beside the others.
	waitGroups, err := startGroups()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The release-stamped build the image tests need links while the control plane
	// starts.
	versioned := make(chan struct{})
	go func() {
		defer close(versioned)
		sub := filepath.Join(dir, "versioned")
		if err := os.Mkdir(sub, 0o755); err != nil {
			versionedBuild.err = err
			return
		}
		const pkg = "github.com/kubectl-catalog/kubectl-catalog/pkg/version."
		versionedBuild.path, versionedBuild.err = controlplane.BuildPluginWith(sub,
			"-X "+pkg+"gitVersion="+versionedVersion+" -X "+pkg+"defaultRegistry="+versionedRegistry)
	}()
	versionedBuild.done = versioned
	defer func() { <-versioned }()
	code := controlplane.RunMain(m, &cp)
	printCommandsCPU()
	if !waitGroups() && code == 0 {
		code = 1
	}
	return code
}

// printCommandsCPU says how many commands the tests ran and the processor time they
// used, beside the control plane's (RunMain): where the suite's time goes.
func printCommandsCPU() {
	fmt.Fprintf(os.Stderr, "commands run by the tests: %d, CPU %s\n", commandsRun.Load(),
		time.Duration(commandsCPU.Load()).Round(100*time.Millisecond))
}

// The release-stamped build of the plugin: its version and default image registry.
const (
	versionedVersion  = "v1.4.2"
	versionedRegistry = "registry.test.invalid/platform"
)

// versionedBuild is kubectl-catalog built as a release builds it, with versionedVersion
// and versionedRegistry stamped in; TestMain starts the build, versionedPlugin waits
// for it.
var versionedBuild struct {
	done <-chan struct{}
	path string
	err  error
}

// versionedPlugin is the path of the release-stamped build.
func versionedPlugin(t *testing.T) string {
	t.Helper()
	<-versionedBuild.done
	if versionedBuild.err != nil {
		t.Fatalf("building a versioned kubectl-catalog: %v", versionedBuild.err)
	}
	return versionedBuild.path
}

// asRunner is the flag the tests' reconcile runs take: the control plane has no trust
// policy installed (test/e2e/trust_test.go installs it for itself), so no record's author
// can be verified, and reconcile acts on them with the admin's own rights only when asked
// to; the records are the tests' own.
const asRunner = "--trust-namespace-writers"
