package e2e

import (
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

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

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
