package controlplane

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
)

// Versions of the components the tools module builds. They are part of the
// cache key, together with a hash of the tools module's files.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.6.16"
)

// ToolsDirEnv overrides where the tools module is found.
const ToolsDirEnv = "KUBECTL_CATALOG_TOOLS_DIR"

// CacheDirEnv overrides the directory binaries are cached in.
const CacheDirEnv = "KUBECTL_CATALOG_CACHE_DIR"

// Binaries are the paths of the control-plane programs.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Kubectl           string
}

// EnsureBinaries returns the control-plane binaries, building them from the
// Go module proxy into a per-user cache on first use. The cache directory is
// keyed by the component versions and a hash of the tools module, so a
// change of version builds afresh and everything else reuses the cache.
// Concurrent callers (test packages run in parallel) wait for one build.
func EnsureBinaries(log io.Writer) (Binaries, error) {
	toolsDir, err := findToolsDir()
	if err != nil {
		return Binaries{}, err
	}
	key, err := toolsKey(toolsDir)
	if err != nil {
		return Binaries{}, err
	}
	cacheRoot, err := cacheRoot()
	if err != nil {
		return Binaries{}, err
	}
	dir := filepath.Join(cacheRoot, fmt.Sprintf("kubernetes-%s_etcd-%s_%s", KubernetesVersion, EtcdVersion, key))
	bins := Binaries{
		Etcd:              filepath.Join(dir, "etcd"),
		APIServer:         filepath.Join(dir, "kube-apiserver"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Kubectl:           filepath.Join(dir, "kubectl"),
	}
	if complete(bins) {
		return bins, nil
	}
	if err := os.MkdirAll(cacheRoot, 0o755); err != nil {
		return Binaries{}, err
	}
	unlock, err := lockFile(filepath.Join(cacheRoot, ".build.lock"))
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	if complete(bins) { // built by someone else while we waited
		return bins, nil
	}
	fmt.Fprintf(log, "building kube-apiserver, kube-controller-manager and kubectl %s and etcd %s into %s (first run only; several minutes)\n",
		KubernetesVersion, EtcdVersion, dir)
	tmp, err := os.MkdirTemp(cacheRoot, ".build-")
	if err != nil {
		return Binaries{}, err
	}
	defer os.RemoveAll(tmp)
	if err := goBuild(log, toolsDir, tmp, "./cmd/..."); err != nil {
		return Binaries{}, err
	}
	if err := goBuild(log, filepath.Join(toolsDir, "etcd"), filepath.Join(tmp, "etcd"), "."); err != nil {
		return Binaries{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return Binaries{}, fmt.Errorf("cannot move the built binaries into the cache: %w", err)
	}
	return bins, nil
}

// ldflags stamps the Kubernetes version into the binaries, as the upstream
// release build does: a module build would otherwise report v0.0.0-master.
func ldflags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	flags := []string{"-s", "-w"}
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", pkg+".gitVersion="+KubernetesVersion,
			"-X", pkg+".gitMajor="+major,
			"-X", pkg+".gitMinor="+minor,
			"-X", pkg+".gitTreeState=clean",
		)
	}
	return strings.Join(flags, " ")
}

func complete(b Binaries) bool {
	for _, p := range []string{b.Etcd, b.APIServer, b.ControllerManager, b.Kubectl} {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return false
		}
	}
	return true
}

func goBuild(log io.Writer, dir, out, pkg string) error {
	cmd := exec.Command(goCommand(), "build", "-ldflags="+ldflags(), "-o", out, pkg)
	cmd.Dir = dir
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s in %s: %w", pkg, dir, err)
	}
	return nil
}

// findToolsDir locates test/tools: from the environment, else in the checkout.
func findToolsDir() (string, error) {
	if d := os.Getenv(ToolsDirEnv); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%w (or set %s to the tools module)", err, ToolsDirEnv)
	}
	d := filepath.Join(root, "test", "tools")
	if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
		return "", fmt.Errorf("cannot locate the tools module at %s: set %s", d, ToolsDirEnv)
	}
	return d, nil
}

// Module is the module path of the plugin's checkout.
const Module = "github.com/kubectl-catalog/kubectl-catalog"

// RepoRoot is the root of the checkout: the nearest directory at or above the working
// directory whose go.mod declares Module. Tests, benchmarks and the tools command all
// run inside the checkout; source file paths cannot locate it, as the Makefile builds
// with -trimpath (so that a fresh clone reuses the build cache of another).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if strings.TrimSpace(first) == "module "+Module {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("cannot locate the checkout of %s at or above %s", Module, dir)
		}
	}
}

// goCommand is the go command to build with: the one on PATH (go test puts its own
// first).
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// toolsKey hashes every file of the tools module that affects the build: the
// module and its etcd module, not the other modules under it (krew, release),
// which build other programs.
func toolsKey(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && d.Name() != "etcd" {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if n := d.Name(); strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), ldflags())
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func cacheRoot() (string, error) {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		// No HOME (some CI runners): a per-user directory under the
		// system's temporary directory still survives between runs.
		d = filepath.Join(os.TempDir(), fmt.Sprintf("kubectl-catalog-cache-%d", os.Getuid()))
	}
	return filepath.Join(d, "kubectl-catalog", "controlplane"), nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
