// Package version reports the version of the kubectl-catalog binary.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// These are set at link time by the release build:
//
//	-X github.com/kubectl-catalog/kubectl-catalog/pkg/version.gitVersion=v0.1.0
//	-X github.com/kubectl-catalog/kubectl-catalog/pkg/version.gitCommit=<sha>
//	-X github.com/kubectl-catalog/kubectl-catalog/pkg/version.buildDate=<RFC 3339>
//	-X github.com/kubectl-catalog/kubectl-catalog/pkg/version.defaultRegistry=<registry/path>
//
// They are unexported and never written at run time.
var (
	gitVersion string
	gitCommit  string
	buildDate  string
	// defaultRegistry is where the release pushed this build's image
	// (<defaultRegistry>/kubectl-catalog:<gitVersion>); empty in a build that
	// was not given one.
	defaultRegistry string
)

// ImageName is the repository name of the kubectl-catalog image under the
// default registry.
const ImageName = "kubectl-catalog"

// Info describes a build of kubectl-catalog.
type Info struct {
	GitVersion string `json:"gitVersion"`
	GitCommit  string `json:"gitCommit,omitempty"`
	BuildDate  string `json:"buildDate,omitempty"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Get returns the version of this binary. Values stamped by the linker win;
// otherwise the module and VCS information Go records in every build is used,
// so `go install` builds still report something meaningful.
func Get() Info {
	info := Info{
		GitVersion: gitVersion,
		GitCommit:  gitCommit,
		BuildDate:  buildDate,
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fillFromBuildInfo(&info, bi)
	}
	if info.GitVersion == "" {
		info.GitVersion = "v0.0.0-dev"
	}
	return info
}

func fillFromBuildInfo(info *Info, bi *debug.BuildInfo) {
	if info.GitVersion == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.GitVersion = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if info.GitCommit == "" {
				info.GitCommit = s.Value
			}
		case "vcs.time":
			if info.BuildDate == "" {
				info.BuildDate = s.Value
			}
		}
	}
}

// DefaultImage returns the image of this build, <registry>/kubectl-catalog:<version>,
// for "reconcile install" without --image. Only a build stamped by the linker
// with both a version and a default registry (a release, or "make build
// REGISTRY=...") has one; otherwise the error says what is missing.
func DefaultImage() (string, error) {
	return defaultImage(gitVersion, defaultRegistry)
}

func defaultImage(version, registry string) (string, error) {
	registry = strings.TrimSuffix(strings.TrimSpace(registry), "/")
	switch {
	case version == "":
		return "", fmt.Errorf("this kubectl-catalog is a development build without a version, so it has no image of its own")
	case registry == "":
		return "", fmt.Errorf("this kubectl-catalog (%s) was built without a default image registry, so it has no image of its own", version)
	}
	return registry + "/" + ImageName + ":" + version, nil
}
