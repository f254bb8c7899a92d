package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"
)

// -host-platform builds the image for this machine's platform only (linux and
// this machine's GOARCH), as "make test-release" does; "make release-check"
// builds every platform of the image.
var hostPlatform = flag.Bool("host-platform", false, "build the image for linux/GOARCH of this machine only, not for every platform")

// wantPlatforms are the platforms the test builds.
func wantPlatforms(t *testing.T) []string {
	t.Helper()
	if !*hostPlatform {
		return Platforms
	}
	p := "linux/" + runtime.GOARCH
	if !slices.Contains(Platforms, p) {
		t.Fatalf("-host-platform: the image is for %v, not %s", Platforms, p)
	}
	return []string{p}
}

// repoRoot is the kubectl-catalog repository, four levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "kubectl-catalog")); err != nil {
		t.Fatalf("not the repository's root: %s", root)
	}
	return root
}

// "make image" against an in-process registry: the index it pushes has every
// platform built (both, or this machine's with -host-platform), each running the
// static binary as 65532 with the OCI labels, on the base of this tool and
// nothing else; the binary for this machine runs and says the version it was
// built as.
func TestMakeImage_PushesARunnableNonRootIndex(t *testing.T) {
	root := repoRoot(t)
	platforms := wantPlatforms(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	const version = "v9.8.7-imagetest"
	const revision = "0123456789abcdef0123456789abcdef01234567"

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "image",
		"REGISTRY="+host+"/team", "VERSION="+version, "COMMIT="+revision, "IMAGE_PLATFORMS="+strings.Join(platforms, ","))
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("make image took %s\n%s", time.Since(start).Round(time.Millisecond), out)

	ref, err := name.ParseReference(host + "/team/kubectl-catalog:" + version)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("pulling the index %s: %v", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range im.Manifests {
		got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	slices.Sort(got)
	if !slices.Equal(got, platforms) {
		t.Fatalf("platforms %v, want %v", got, platforms)
	}

	base, err := Base()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		if cf.OS+"/"+cf.Architecture != p {
			t.Errorf("%s: config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if cf.Config.User != User {
			t.Errorf("%s: user %q, want %q", p, cf.Config.User, User)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{Entrypoint}) || len(cf.Config.Cmd) != 0 {
			t.Errorf("%s: entrypoint %q cmd %q, want [%s]", p, cf.Config.Entrypoint, cf.Config.Cmd, Entrypoint)
		}
		for k, want := range map[string]string{LabelVersion: version, LabelRevision: revision, LabelSource: "https://github.com/kubectl-catalog/kubectl-catalog"} {
			if got := cf.Config.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", p, k, got, want)
			}
		}
		// "reconcile install" runs "kubectl-catalog ...": it must be on PATH.
		if !slices.ContainsFunc(cf.Config.Env, func(e string) bool {
			return strings.HasPrefix(e, "PATH=") && slices.Contains(strings.Split(strings.TrimPrefix(e, "PATH="), ":"), filepath.Dir(Entrypoint))
		}) {
			t.Errorf("%s: %s is not on PATH: %q", p, filepath.Dir(Entrypoint), cf.Config.Env)
		}

		// The base's layer first, unchanged; then ko's.
		baseImg, err := base.Image(mustBaseDigest(t, base, p))
		if err != nil {
			t.Fatal(err)
		}
		baseLayers, _ := baseImg.Layers()
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := baseLayers[0].Digest()
		got, _ := layers[0].Digest()
		if got != want {
			t.Errorf("%s: first layer %s, want the base's %s", p, got, want)
		}

		files, size := readLayers(t, layers)
		t.Logf("%s: %d layers, %.1f MiB compressed", p, len(layers), float64(size)/(1<<20))
		for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
			if _, ok := files[shell]; ok {
				t.Errorf("%s: the image has a shell: /%s", p, shell)
			}
		}
		if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot 65532:\n%s", p, files["etc/passwd"])
		}
		if n := countCerts(t, files[strings.TrimPrefix(CABundle, "/")]); n < 50 {
			t.Errorf("%s: %s holds %d certificates", p, CABundle, n)
		}
		bin, ok := files[strings.TrimPrefix(Entrypoint, "/")]
		if !ok {
			t.Fatalf("%s: no %s in the image", p, Entrypoint)
		}
		// Static: no interpreter to load it.
		if f, err := elf.NewFile(bytes.NewReader(bin)); err != nil {
			t.Errorf("%s: %s: %v", p, Entrypoint, err)
		} else if slices.ContainsFunc(f.Progs, func(prog *elf.Prog) bool { return prog.Type == elf.PT_INTERP }) {
			t.Errorf("%s: %s is dynamically linked", p, Entrypoint)
		}
		if p != runtime.GOOS+"/"+runtime.GOARCH {
			continue
		}
		// The binary for this machine: run it.
		path := filepath.Join(t.TempDir(), "kubectl-catalog")
		if err := os.WriteFile(path, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		run := exec.CommandContext(ctx, path, "version", "--client", "-o", "json")
		run.Env = append(os.Environ(), "HOME="+t.TempDir())
		vout, err := run.Output()
		if err != nil {
			t.Fatalf("the image's binary: version --client: %v", err)
		}
		var v struct {
			ClientVersion struct {
				GitVersion string `json:"gitVersion"`
				GitCommit  string `json:"gitCommit"`
				Platform   string `json:"platform"`
			} `json:"clientVersion"`
		}
		if err := json.Unmarshal(vout, &v); err != nil {
			t.Fatalf("version --client -o json: %v\n%s", err, vout)
		}
		if v.ClientVersion.GitVersion != version || v.ClientVersion.GitCommit != revision || v.ClientVersion.Platform != p {
			t.Errorf("the image's binary says %+v, want %s %s %s", v.ClientVersion, version, revision, p)
		}
	}
}

func mustBaseDigest(t *testing.T, base v1.ImageIndex, platform string) v1.Hash {
	t.Helper()
	im, err := base.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		if m.Platform.OS+"/"+m.Platform.Architecture == platform {
			return m.Digest
		}
	}
	t.Fatalf("the base has no %s", platform)
	return v1.Hash{}
}

// readLayers returns the files of the image (upper layers win) and the sum of
// the layers' compressed sizes.
func readLayers(t *testing.T, layers []v1.Layer) (map[string][]byte, int64) {
	t.Helper()
	files := map[string][]byte{}
	var size int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		size += s
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
			if h.Typeflag == tar.TypeReg {
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				files[name] = b
			} else {
				files[name] = nil
			}
		}
		rc.Close()
	}
	return files, size
}

func countCerts(t *testing.T, data []byte) int {
	t.Helper()
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return n
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Errorf("certificate %d: %v", n, err)
		}
		n++
	}
}

// The base is the same bytes every time: the release's kos and "make image"
// start from the same digest.
func TestBase_IsReproducible(t *testing.T) {
	a, err := Base()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Base()
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("two digests: %s, %s", da, db)
	}
}

// .goreleaser.yaml's kos build the image "make image" builds: the same base
// (served by serve-base), platforms, user, labels and program, no SBOM.
func TestGoreleaserKosMatches(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Kos []struct {
			Main      string            `json:"main"`
			BaseImage string            `json:"base_image"`
			User      string            `json:"user"`
			Platforms []string          `json:"platforms"`
			Labels    map[string]string `json:"labels"`
			SBOM      string            `json:"sbom"`
			Bare      bool              `json:"bare"`
			Tags      []string          `json:"tags"`
		} `json:"kos"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Kos) != 1 {
		t.Fatalf("want one kos entry, got %d", len(cfg.Kos))
	}
	k := cfg.Kos[0]
	check := func(what string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("kos %s: %v, want %v", what, got, want)
		}
	}
	check("base_image", k.BaseImage, BaseRef)
	check("user", k.User, User)
	check("platforms", k.Platforms, Platforms)
	check("sbom", k.SBOM, "none")
	check("bare", k.Bare, true)
	check("main", k.Main, "./cmd/kubectl-catalog")
	check("tags", k.Tags, []string{"v{{ .Version }}"})
	var keys []string
	for key := range k.Labels {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var want []string
	for key := range Labels("v", "r", "s") {
		want = append(want, key)
	}
	slices.Sort(want)
	check("label keys", keys, want)
}

// plugins/catalog.yaml, the manifest people read, says what the one goreleaser
// generates says.
func TestKrewManifestMatchesGoreleaser(t *testing.T) {
	root := repoRoot(t)
	var gr struct {
		Krews []struct {
			ShortDescription string `json:"short_description"`
			Description      string `json:"description"`
			Caveats          string `json:"caveats"`
			Homepage         string `json:"homepage"`
		} `json:"krews"`
	}
	var plugin struct {
		Spec struct {
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Caveats          string `json:"caveats"`
			Homepage         string `json:"homepage"`
		} `json:"spec"`
	}
	for path, into := range map[string]any{".goreleaser.yaml": &gr, "plugins/catalog.yaml": &plugin} {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if len(gr.Krews) != 1 {
		t.Fatalf("want one krews entry, got %d", len(gr.Krews))
	}
	k, p := gr.Krews[0], plugin.Spec
	for what, pair := range map[string][2]string{
		"shortDescription": {k.ShortDescription, p.ShortDescription},
		"description":      {k.Description, p.Description},
		"caveats":          {k.Caveats, p.Caveats},
		"homepage":         {k.Homepage, p.Homepage},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s differs:\n.goreleaser.yaml:\n%s\nplugins/catalog.yaml:\n%s", what, pair[0], pair[1])
		}
	}
	if n := len(strings.Fields(k.ShortDescription)); n > 6 {
		t.Errorf("shortDescription %q: %d words, want a few", k.ShortDescription, n)
	}
	if !strings.Contains(k.Caveats, "chmod +x") {
		t.Errorf("the caveats do not say to make the completion helper executable:\n%s", k.Caveats)
	}
}
