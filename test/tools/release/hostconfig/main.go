// Command hostconfig writes a copy of .goreleaser.yaml that builds for one
// platform only, for "make test-release": a goreleaser snapshot of it makes
// that platform's archive and a krew manifest with that archive, in seconds
// instead of the minutes of every platform.
//
//	hostconfig --config .goreleaser.yaml --dist DIR [--goos GOOS --goarch GOARCH] > host.yaml
//
// goreleaser (the open-source edition) cannot do this itself: "goreleaser
// build --single-target" builds one binary but makes no archives and no krew
// manifest, and "release" builds every target of the configuration.
//
// The copy differs from the configuration only in this:
//   - each build's goos and goarch are the one platform; a build that does not
//     list it is left out;
//   - an archive, krew manifest or ko image made only from builds left out is
//     left out, and the ids of builds left out are removed from the others'
//     (at least one archive and one krew manifest must be left);
//   - dist is DIR, so that the snapshot does not replace the one of "make dist".
//
// A build that names its targets ("targets:") or leaves goos or goarch to
// goreleaser's defaults is refused: the filter knows goos and goarch lists only,
// which is what .goreleaser.yaml uses.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"slices"

	"sigs.k8s.io/yaml"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("hostconfig: ")
	config := flag.String("config", ".goreleaser.yaml", "the goreleaser configuration")
	dist := flag.String("dist", "", "the copy's dist directory")
	goos := flag.String("goos", runtime.GOOS, "the platform's GOOS")
	goarch := flag.String("goarch", runtime.GOARCH, "the platform's GOARCH")
	flag.Parse()
	if *dist == "" || flag.NArg() != 0 {
		log.Fatal("usage: hostconfig --config FILE --dist DIR [--goos GOOS --goarch GOARCH] > FILE")
	}
	if err := run(*config, *dist, *goos, *goarch, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(config, dist, goos, goarch string, out io.Writer) error {
	in, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	b, err := Filter(in, dist, goos, goarch)
	if err != nil {
		return fmt.Errorf("%s: %w", config, err)
	}
	_, err = fmt.Fprintf(out, "# %s for %s/%s only, written by test/tools/release/hostconfig.\n%s", config, goos, goarch, b)
	return err
}

// Filter returns the goreleaser configuration in for goos/goarch only, with
// its dist directory set to dist.
func Filter(in []byte, dist, goos, goarch string) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(in, &cfg); err != nil {
		return nil, err
	}
	builds, err := list(cfg, "builds")
	if err != nil {
		return nil, err
	}
	var kept []any
	dropped := map[string]bool{}
	for i, b := range builds {
		build, ok := b.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("builds[%d] is not a mapping", i)
		}
		if _, ok := build["targets"]; ok {
			return nil, fmt.Errorf("builds[%d] names its targets: only goos and goarch lists can be filtered", i)
		}
		if _, ok := build["goos"]; !ok {
			return nil, fmt.Errorf("builds[%d] lists no goos: only goos and goarch lists can be filtered", i)
		}
		if _, ok := build["goarch"]; !ok {
			return nil, fmt.Errorf("builds[%d] lists no goarch: only goos and goarch lists can be filtered", i)
		}
		id, _ := build["id"].(string)
		if !has(build["goos"], goos) || !has(build["goarch"], goarch) {
			if id == "" {
				return nil, fmt.Errorf("builds[%d] has no id: archives cannot be told apart from it", i)
			}
			dropped[id] = true
			continue
		}
		build["goos"], build["goarch"] = []any{goos}, []any{goarch}
		kept = append(kept, build)
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("no build is for %s/%s", goos, goarch)
	}
	cfg["builds"] = kept

	// Sections that name builds by id: leave out an entry made only from
	// builds left out.
	for _, section := range []string{"archives", "krews"} {
		entries, err := list(cfg, section)
		if err != nil {
			return nil, err
		}
		var out []any
		for i, e := range entries {
			entry, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d] is not a mapping", section, i)
			}
			raw, ok := entry["ids"]
			if !ok {
				out = append(out, entry) // all builds
				continue
			}
			ids, ok := raw.([]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d].ids is not a list", section, i)
			}
			ids = slices.DeleteFunc(slices.Clone(ids), func(id any) bool { s, _ := id.(string); return dropped[s] })
			if len(ids) == 0 {
				continue
			}
			entry["ids"] = ids
			out = append(out, entry)
		}
		if len(entries) > 0 && len(out) == 0 {
			return nil, fmt.Errorf("no %s entry is left: they are made only from builds for other platforms", section)
		}
		if entries != nil {
			cfg[section] = out
		}
	}
	kos, err := list(cfg, "kos")
	if err != nil {
		return nil, err
	}
	if kos != nil {
		cfg["kos"] = slices.DeleteFunc(kos, func(k any) bool {
			m, _ := k.(map[string]any)
			b, _ := m["build"].(string)
			return dropped[b]
		})
	}
	cfg["dist"] = dist
	return yaml.Marshal(cfg)
}

// list returns cfg[key] as a list, nil when it is not there.
func list(cfg map[string]any, key string) ([]any, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", key)
	}
	return l, nil
}

// has reports whether the list v holds s.
func has(v any, s string) bool {
	l, _ := v.([]any)
	return slices.Contains(l, any(s))
}
