// Command image builds the kubectl-catalog container image without a Docker
// engine and without reaching any public registry, for "make image" and for
// the release.
//
//	image build --dir REPO --repo REGISTRY/kubectl-catalog --tag VERSION [--version V --revision SHA --source URL] [--ldflags FLAGS] [--platforms P,...]
//	image base  (--push REF | --oci-layout DIR)
//	image serve-base [--listen 127.0.0.1:5151] -- COMMAND [ARG...]
//
// The base image is made here, from nothing: one layer with /etc/passwd and
// /etc/group (root and nonroot, uid and gid 65532), an empty home for
// nonroot, a world-writable /tmp, and the Mozilla CA bundle of
// golang.org/x/crypto/x509roots/fallback at /etc/ssl/certs/ca-certificates.crt.
// No shell, no package manager, no other program. Its bytes depend only on the
// pinned module versions, so every build of it has the same digest.
//
// "build" gives that base to ko, used as a library (ko's own resolution of a
// base image would go to a registry), which builds the static binary for
// every platform (or those of --platforms), adds it as a layer at
// /ko-app/kubectl-catalog, makes it the entrypoint, runs it as 65532 and
// pushes the index to --repo:--tag.
//
// "serve-base" is for goreleaser's kos, which takes its base image from a
// registry: it serves the same base from an in-process registry on the
// loopback address .goreleaser.yaml names (BaseRef), runs COMMAND, and stops.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/ko/pkg/build"
	"github.com/google/ko/pkg/publish"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The shape of the image. .goreleaser.yaml's kos section says the same, and
// TestGoreleaserKosMatches checks that it does.
const (
	// ImportPath is the program the image runs.
	ImportPath = "github.com/kubectl-catalog/kubectl-catalog/cmd/kubectl-catalog"
	// User is the uid:gid the image runs as.
	User = "65532:65532"
	// BaseRef is where serve-base serves the base image, and where
	// .goreleaser.yaml's kos take it from.
	BaseRef = "127.0.0.1:5151/kubectl-catalog-base:static"
	// CABundle is where the CA certificates are.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// Entrypoint is where ko puts the binary.
	Entrypoint = "/ko-app/kubectl-catalog"
)

// Platforms are those of the image.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// Label keys of the image (OCI annotations as image labels).
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelTitle    = "org.opencontainers.image.title"
	LabelLicenses = "org.opencontainers.image.licenses"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("image: ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		log.Print(err)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		os.Exit(1)
	}
}

const usage = `usage:
  image build --dir REPO --repo REGISTRY/kubectl-catalog --tag VERSION [--version V] [--revision SHA] [--source URL] [--ldflags FLAGS] [--platforms P,...]
  image base (--push REF | --oci-layout DIR)
  image serve-base [--listen ADDR] -- COMMAND [ARG...]`

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "build":
		return runBuild(ctx, args[1:], out)
	case "base":
		return runBase(ctx, args[1:], out)
	case "serve-base":
		return runServeBase(ctx, args[1:])
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// BuildOptions describe one build of the image.
type BuildOptions struct {
	// Dir is the repository's root (the main module).
	Dir string
	// Repo is the repository to push to, REGISTRY/kubectl-catalog.
	Repo string
	// Tag is the tag to push, the version.
	Tag string
	// Version, Revision and Source go into the OCI labels.
	Version, Revision, Source string
	// Ldflags are passed to go build (the version stamps).
	Ldflags string
	// Platforms are those to build, some of Platforms; empty means all.
	Platforms []string
}

func runBuild(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	var o BuildOptions
	fs.StringVar(&o.Dir, "dir", ".", "the repository's root")
	fs.StringVar(&o.Repo, "repo", "", "where to push: REGISTRY/kubectl-catalog")
	fs.StringVar(&o.Tag, "tag", "", "the tag to push (the version)")
	fs.StringVar(&o.Version, "version", "", "org.opencontainers.image.version (default: --tag)")
	fs.StringVar(&o.Revision, "revision", "", "org.opencontainers.image.revision: the commit")
	fs.StringVar(&o.Source, "source", "", "org.opencontainers.image.source: the repository's URL")
	fs.StringVar(&o.Ldflags, "ldflags", "", "go build -ldflags")
	platforms := fs.String("platforms", "", "the platforms to build, comma-separated (default: all, "+strings.Join(Platforms, ",")+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *platforms != "" {
		o.Platforms = strings.Split(*platforms, ",")
	}
	if o.Repo == "" || o.Tag == "" {
		return fmt.Errorf("build needs --repo and --tag\n%s", usage)
	}
	ref, err := Build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, ref)
	return nil
}

// Build builds the image for every platform (those of o.Platforms if any)
// with ko on the base of Base, pushes it as an index to o.Repo:o.Tag and
// returns its reference by digest.
func Build(ctx context.Context, o BuildOptions) (name.Reference, error) {
	if o.Version == "" {
		o.Version = o.Tag
	}
	if len(o.Platforms) == 0 {
		o.Platforms = Platforms
	}
	for _, p := range o.Platforms {
		if !slices.Contains(Platforms, p) {
			return nil, fmt.Errorf("platform %q: the image is for %s", p, strings.Join(Platforms, ", "))
		}
	}
	repo, err := name.NewRepository(o.Repo)
	if err != nil {
		return nil, fmt.Errorf("--repo %q: %w", o.Repo, err)
	}
	base, err := Base()
	if err != nil {
		return nil, err
	}
	baseRef, err := name.ParseReference(BaseRef)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	opts := []build.Option{
		build.WithPlatforms(o.Platforms...),
		build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) {
			return baseRef, base, nil
		}),
		build.WithConfig(map[string]build.Config{ImportPath: {
			ID:      "kubectl-catalog",
			Ldflags: strings.Fields(o.Ldflags),
			Flags:   build.FlagArray{"-trimpath"},
			Env:     []string{"CGO_ENABLED=0"},
		}}),
		build.WithUser(User),
		build.WithDisabledSBOM(),
		build.WithCreationTime(v1.Time{Time: time.Unix(0, 0).UTC()}),
	}
	for k, v := range Labels(o.Version, o.Revision, o.Source) {
		opts = append(opts, build.WithLabel(k, v))
	}
	b, err := build.NewGo(ctx, dir, opts...)
	if err != nil {
		return nil, fmt.Errorf("ko: %w", err)
	}
	res, err := b.Build(ctx, ImportPath)
	if err != nil {
		return nil, fmt.Errorf("ko build: %w", err)
	}
	// For one platform ko makes an image, not an index: push an index of
	// that image, the same shape as for every platform.
	if img, ok := res.(v1.Image); ok {
		if res, err = indexOf(img); err != nil {
			return nil, err
		}
	}
	pub, err := publish.NewDefault(repo.String(),
		publish.WithTags([]string{o.Tag}),
		publish.WithNamer(func(base, _ string) string { return base }),
		publish.WithAuthFromKeychain(authn.DefaultKeychain),
		publish.Insecure(repo.Registry.Scheme() == "http"),
	)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	ref, err := pub.Publish(ctx, res, ImportPath)
	if err != nil {
		return nil, fmt.Errorf("pushing to %s: %w", repo, err)
	}
	return ref, pub.Close()
}

// indexOf returns an index of the one image img.
func indexOf(img v1.Image) (v1.ImageIndex, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add:        img,
		Descriptor: v1.Descriptor{MediaType: mt, Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}},
	}), nil
}

// Labels are the image's labels. Empty values are left out.
func Labels(version, revision, source string) map[string]string {
	labels := map[string]string{
		LabelTitle:    "kubectl-catalog",
		LabelLicenses: "Apache-2.0",
		LabelVersion:  version,
		LabelRevision: revision,
		LabelSource:   source,
	}
	for k, v := range labels {
		if v == "" {
			delete(labels, k)
		}
	}
	return labels
}

func runBase(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("base", flag.ContinueOnError)
	push := fs.String("push", "", "push the base index to this reference")
	dir := fs.String("oci-layout", "", "write the base index into this OCI layout directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*push == "") == (*dir == "") {
		return fmt.Errorf("base needs one of --push and --oci-layout\n%s", usage)
	}
	idx, err := Base()
	if err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	if *dir != "" {
		if _, err := layout.Write(*dir, idx); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s@%s\n", *dir, d)
		return nil
	}
	ref, err := name.ParseReference(*push)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s@%s\n", ref.Context(), d)
	return nil
}

func runServeBase(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve-base", flag.ContinueOnError)
	ref, _ := name.ParseReference(BaseRef)
	listen := fs.String("listen", ref.Context().RegistryStr(), "loopback address to serve the base image on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	command := fs.Args()
	if len(command) == 0 {
		return fmt.Errorf("serve-base needs a command to run\n%s", usage)
	}
	idx, err := Base()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("cannot serve the base image on %s (it must be there for .goreleaser.yaml's kos): %w", *listen, err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	target, err := name.ParseReference(strings.Replace(BaseRef, ref.Context().RegistryStr(), ln.Addr().String(), 1))
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(target, idx, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing the base image to %s: %w", target, err)
	}
	log.Printf("serving the base image as %s", target)
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}

// Base returns the base image: an index of one image per platform, all with
// the same single layer (nothing in it is specific to a platform).
func Base() (v1.ImageIndex, error) {
	layer, err := baseLayer()
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range Platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History: v1.History{
				Created:   v1.Time{Time: time.Unix(0, 0).UTC()},
				CreatedBy: "kubectl-catalog test/tools/release/image",
				Comment:   "passwd and group (nonroot 65532), /tmp, CA certificates",
			},
		})
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
		cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
		cf.Config.User = User
		cf.Config.WorkingDir = "/home/nonroot"
		cf.Config.Env = []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=" + CABundle,
		}
		img, err = mutate.ConfigFile(img, cf)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: platform},
		})
	}
	return idx, nil
}

// baseLayer is the base image's only layer.
func baseLayer() (v1.Layer, error) {
	var certs bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		// A root trusted only for certificates issued before some date
		// cannot be said so in a PEM bundle: leave it out.
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&certs, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("the CA bundle is empty")
	}
	type entry struct {
		name string
		mode int64
		uid  int
		dir  bool
		data []byte
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CABundle, "/"), mode: 0o644, data: certs.Bytes()},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
