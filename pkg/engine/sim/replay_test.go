package sim

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// replayCommand is the command that replays seed of the world a run was given: every
// flag of the simulation set on the command line (but the seeds, which it names
// itself), then those of world (the flags a test of a world sets itself, "-sim.move
// -sim.asyncbind"), which win over the command line's.
func replayCommand(fs *flag.FlagSet, world string, seed uint64) string {
	args := append(replayFlags(fs, world), fmt.Sprintf("-sim.seed=%d", seed))
	return "go test ./pkg/engine/sim -run 'TestSim$' " + strings.Join(args, " ") + " -v"
}

// replayFlags are the flags of the simulation fs was given (flag.Visit: those set), as
// arguments in the order of their names, but -sim.seed and -sim.seeds, with world's
// flags in place of those of the same name.
func replayFlags(fs *flag.FlagSet, world string) []string {
	var args []string
	named := map[string]bool{}
	for _, a := range strings.Fields(world) {
		named[flagName(a)] = true
	}
	fs.Visit(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "sim.") || f.Name == "sim.seed" || f.Name == "sim.seeds" || named[f.Name] {
			return
		}
		value := f.Value.String()
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && value == "true" {
			args = append(args, "-"+f.Name)
			return
		}
		args = append(args, fmt.Sprintf("-%s=%s", f.Name, value))
	})
	args = append(args, strings.Fields(world)...)
	slices.SortStableFunc(args, func(a, b string) int { return strings.Compare(flagName(a), flagName(b)) })
	return args
}

// flagName is the name of the flag argument a names: "sim.rogue" of "-sim.rogue=false".
func flagName(a string) string {
	a = strings.TrimLeft(a, "-")
	name, _, _ := strings.Cut(a, "=")
	return name
}

// replay is the replay command of seed in the world the command line gave the test
// binary, with world's flags (see replayCommand).
func replay(world string, seed uint64) string {
	return replayCommand(flag.CommandLine, world, seed)
}

func TestReplayCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		world string
		want  string
	}{
		{"no flags", nil, "", "go test ./pkg/engine/sim -run 'TestSim$' -sim.seed=7 -v"},
		{"a world's flags", []string{"-sim.abandon"}, "", "go test ./pkg/engine/sim -run 'TestSim$' -sim.abandon -sim.seed=7 -v"},
		{"several flags, seeds left out", []string{"-sim.seed=40", "-sim.seeds=20", "-sim.rogue", "-sim.asyncbind", "-sim.move"}, "",
			"go test ./pkg/engine/sim -run 'TestSim$' -sim.asyncbind -sim.move -sim.rogue -sim.seed=7 -v"},
		{"a flag set false, a number", []string{"-sim.foreign=false", "-sim.steps=90"}, "",
			"go test ./pkg/engine/sim -run 'TestSim$' -sim.foreign=false -sim.steps=90 -sim.seed=7 -v"},
		{"a test's world and the command line's", []string{"-sim.rogue", "-sim.move=false"}, "-sim.move -sim.asyncbind",
			"go test ./pkg/engine/sim -run 'TestSim$' -sim.asyncbind -sim.move -sim.rogue -sim.seed=7 -v"},
		{"other flags left out", []string{"-other", "-sim.gc"}, "", "go test ./pkg/engine/sim -run 'TestSim$' -sim.gc -sim.seed=7 -v"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("sim", flag.ContinueOnError)
			for _, name := range []string{"sim.rogue", "sim.asyncbind", "sim.move", "sim.abandon", "sim.gc", "other"} {
				fs.Bool(name, false, "")
			}
			fs.Bool("sim.foreign", true, "")
			fs.Int("sim.steps", 150, "")
			fs.Int("sim.seeds", 0, "")
			fs.Uint64("sim.seed", 0, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := replayCommand(fs, tc.world, 7); got != tc.want {
				t.Errorf("replayCommand(%q, %q) =\n%s\nwant\n%s", tc.args, tc.world, got, tc.want)
			}
		})
	}
}
