package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// profileDir, when set ("-profile DIR"), is where the 64-worker run on the real API
// server leaves the CPU profiles of the three processes that share the machine while
// it runs: the API server's (apiserver.pprof, from its /debug/pprof), etcd's
// (etcd.pprof), the reconcile process's (reconcile.pprof, from a build of the
// plugin that profiles itself: test/bench/profiled) and the bench's own (bench.pprof:
// the counting proxy the profiled run goes through, and the broker), and the
// run's API requests, one a line (requests.txt).
var profileDir string

// profileSeconds is how long the API server's and etcd's profiles last: the run's
// length and more (the time after the run is idle).
const profileSeconds = 8

// profiledPlugin builds test/bench/profiled into dir.
func profiledPlugin(dir string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "kubectl-catalog-profiled")
	cmd := execGo(root, "build", "-o", out, "./test/bench/profiled")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the profiled plugin: %v\n%s", err, b)
	}
	return out, nil
}

// profiles is the profiling of one run; wait returns once the servers' profiles are
// written.
type profiles struct {
	e     *scaleEnv
	bench *os.File
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  []error
}

// startProfiles starts the API server's and etcd's CPU profiles and points the plugin
// run next (through the environment its child inherits) at reconcile.pprof.
func (e *scaleEnv) startProfiles(ctx context.Context) *profiles {
	p := &profiles{e: e}
	e.proxy.Log(true)
	get := func(name string, fetch func() ([]byte, error)) {
		p.wg.Go(func() {
			b, err := fetch()
			if err == nil {
				err = os.WriteFile(filepath.Join(profileDir, name), b, 0o644)
			}
			if err != nil {
				p.mu.Lock()
				p.errs = append(p.errs, fmt.Errorf("%s: %w", name, err))
				p.mu.Unlock()
			}
		})
	}
	get("apiserver.pprof", func() ([]byte, error) {
		return e.core.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", fmt.Sprint(profileSeconds)).Timeout(2 * profileSeconds * time.Second).DoRaw(ctx)
	})
	get("etcd.pprof", func() ([]byte, error) {
		resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", e.cp.EtcdURL, profileSeconds))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s", resp.Status)
		}
		return io.ReadAll(resp.Body)
	})
	// The bench's own process: the counting proxy and the broker.
	if f, err := os.Create(filepath.Join(profileDir, "bench.pprof")); err == nil {
		if pprof.StartCPUProfile(f) == nil {
			p.bench = f
		} else {
			f.Close()
		}
	}
	os.Setenv("KUBECTL_CATALOG_CPUPROFILE", filepath.Join(profileDir, "reconcile.pprof"))
	return p
}

// wait waits for the servers' profiles and stops profiling the plugin's runs.
func (p *profiles) wait() error {
	os.Unsetenv("KUBECTL_CATALOG_CPUPROFILE")
	lines := p.e.proxy.Log(false)
	if err := os.WriteFile(filepath.Join(profileDir, "requests.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		p.errs = append(p.errs, err)
	}
	p.wg.Wait()
	if p.bench != nil {
		pprof.StopCPUProfile()
		p.bench.Close()
	}
	if len(p.errs) > 0 {
		return p.errs[0]
	}
	return nil
}

// execGo is the go command run in dir with args, as a static build.
func execGo(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}
