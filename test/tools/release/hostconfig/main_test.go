package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func readConfig(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func filtered(t *testing.T, in []byte, goos, goarch string) map[string]any {
	t.Helper()
	out, err := Filter(in, "/tmp/d", goos, goarch)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return cfg
}

// field returns the key of every entry of the list section.
func field(t *testing.T, cfg map[string]any, section, key string) []any {
	t.Helper()
	var got []any
	for _, e := range cfg[section].([]any) {
		got = append(got, e.(map[string]any)[key])
	}
	return got
}

// .goreleaser.yaml for one platform: the one build that has it, for it only,
// its archive, a krew manifest of that build, dist elsewhere; the rest as it was.
func TestFilter_TheProjectsConfig(t *testing.T) {
	in := readConfig(t)
	for _, tc := range []struct {
		goos, goarch string
		build        string
		kos          int
	}{
		{"linux", "amd64", "kubectl-catalog", 1},
		{"darwin", "arm64", "kubectl-catalog", 1},
		{"windows", "amd64", "kubectl-catalog-windows", 0},
	} {
		t.Run(tc.goos+"/"+tc.goarch, func(t *testing.T) {
			cfg := filtered(t, in, tc.goos, tc.goarch)
			var orig map[string]any
			if err := yaml.Unmarshal(in, &orig); err != nil {
				t.Fatal(err)
			}
			want := []any{tc.build}
			for what, got := range map[string]any{
				"build ids":   field(t, cfg, "builds", "id"),
				"goos":        field(t, cfg, "builds", "goos"),
				"goarch":      field(t, cfg, "builds", "goarch"),
				"archive ids": field(t, cfg, "archives", "id"),
				"krews ids":   field(t, cfg, "krews", "ids"),
				"dist":        cfg["dist"],
			} {
				w := map[string]any{
					"build ids": want, "archive ids": want, "krews ids": []any{want},
					"goos": []any{[]any{tc.goos}}, "goarch": []any{[]any{tc.goarch}}, "dist": "/tmp/d",
				}[what]
				if !reflect.DeepEqual(got, w) {
					t.Errorf("%s: %v, want %v", what, got, w)
				}
			}
			if n := len(cfg["kos"].([]any)); n != tc.kos {
				t.Errorf("%d kos, want %d", n, tc.kos)
			}
			// What is not about platforms stays as it was.
			for _, key := range []string{"project_name", "before", "checksum", "release", "changelog"} {
				if !reflect.DeepEqual(cfg[key], orig[key]) {
					t.Errorf("%s: %v, want %v", key, cfg[key], orig[key])
				}
			}
			k, o := cfg["krews"].([]any)[0].(map[string]any), orig["krews"].([]any)[0].(map[string]any)
			delete(k, "ids")
			delete(o, "ids")
			if !reflect.DeepEqual(k, o) {
				t.Errorf("krews: %v, want %v", k, o)
			}
			// The build as it was, but for its platforms (ldflags from a YAML alias too).
			b := cfg["builds"].([]any)[0].(map[string]any)
			for _, ob := range orig["builds"].([]any) {
				if o := ob.(map[string]any); o["id"] == tc.build {
					o["goos"], o["goarch"] = []any{tc.goos}, []any{tc.goarch}
					if !reflect.DeepEqual(b, o) {
						t.Errorf("build: %v, want %v", b, o)
					}
				}
			}
		})
	}
}

func TestFilter_Refuses(t *testing.T) {
	for name, tc := range map[string]struct {
		config, goos, goarch, err string
	}{
		"no build for the platform": {string(readConfig(t)), "plan9", "amd64", "no build is for plan9/amd64"},
		"targets": {`
builds:
  - id: a
    targets: [linux_amd64_v1]
`, "linux", "amd64", "names its targets"},
		"goos left to the defaults": {`
builds:
  - id: a
    goarch: [amd64]
`, "linux", "amd64", "lists no goos"},
		"krew manifest of other platforms only": {`
builds:
  - id: a
    goos: [linux]
    goarch: [amd64]
  - id: b
    goos: [darwin]
    goarch: [amd64]
krews:
  - name: x
    ids: [b]
`, "linux", "amd64", "no krews entry is left"},
		"archives of other platforms only": {`
builds:
  - id: a
    goos: [linux]
    goarch: [amd64]
  - id: b
    goos: [darwin]
    goarch: [amd64]
archives:
  - ids: [b]
`, "linux", "amd64", "no archives entry is left"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Filter([]byte(tc.config), "d", tc.goos, tc.goarch)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
		})
	}
}
