package version

import (
	"runtime/debug"
	"testing"

	"gotest.tools/v3/assert"
)

func TestFillFromBuildInfo_UsesModuleVersionAndVCS(t *testing.T) {
	info := Info{}
	fillFromBuildInfo(&info, &debug.BuildInfo{
		Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
		},
	})
	assert.DeepEqual(t, info, Info{GitVersion: "v1.2.3", GitCommit: "abc123", BuildDate: "2026-01-02T03:04:05Z"})
}

func TestFillFromBuildInfo_LinkerValuesWin(t *testing.T) {
	info := Info{GitVersion: "v9.9.9", GitCommit: "stamped"}
	fillFromBuildInfo(&info, &debug.BuildInfo{
		Main:     debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}},
	})
	assert.Equal(t, info.GitVersion, "v9.9.9")
	assert.Equal(t, info.GitCommit, "stamped")
}

func TestFillFromBuildInfo_DevelIsNotAVersion(t *testing.T) {
	info := Info{}
	fillFromBuildInfo(&info, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	assert.Equal(t, info.GitVersion, "")
}

func TestGet_AlwaysHasAVersion(t *testing.T) {
	assert.Assert(t, Get().GitVersion != "")
}

func TestDefaultImage_NeedsAVersionAndARegistry(t *testing.T) {
	img, err := defaultImage("v1.2.3", "registry.example/team/")
	assert.NilError(t, err)
	assert.Equal(t, img, "registry.example/team/kubectl-catalog:v1.2.3")

	_, err = defaultImage("", "registry.example")
	assert.ErrorContains(t, err, "development build without a version")
	_, err = defaultImage("v1.2.3", " ")
	assert.ErrorContains(t, err, "without a default image registry")

	// A test binary is not stamped by the linker.
	_, err = DefaultImage()
	assert.ErrorContains(t, err, "development build")
}
