package sim

import "testing"

// TestSim_MoveWorld runs a few seeds of the move world (-sim.move: export, apply on a
// second cluster, release, give back) as part of the default seeds, alone and with
// asynchronous bindings (make soak runs many more); a run naming seeds or flags leaves it
// out. It fails if a seed fails, if no seed of a world moved an id in, or if no seed
// released one: the seeds must reach the paths they are there for.
func TestSim_MoveWorld(t *testing.T) {
	if *firstSeed != 0 || *seeds != 0 {
		t.Skip("a run of chosen seeds")
	}
	var releasedSeeds int
	for _, world := range []struct {
		name  string
		flags []*bool
		count int
	}{
		{"-sim.move", []*bool{moveWorld}, 8},
		{"-sim.move -sim.asyncbind", []*bool{moveWorld, asyncBindAll}, 3},
	} {
		count := world.count
		if testing.Short() {
			count = (count + 2) / 3
		}
		was := make([]bool, len(world.flags))
		for i, f := range world.flags {
			was[i], *f = *f, true
		}
		var moved, released int
		for seed, w := range runSeeds(1, count) {
			if len(w.move.moved) > 0 {
				moved++
			}
			if len(w.move.released) > 0 {
				released++
			}
			if len(w.failures) > 0 {
				t.Errorf("%s, seed %d: %s\nreplay: %s\n%s",
					world.name, seed, w.failures[0], replay(world.name, seed), tail(w.trace, 60))
			}
		}
		for i, f := range world.flags {
			*f = was[i]
		}
		t.Logf("%s: of %d seeds, %d moved ids in and %d released ids there", world.name, count, moved, released)
		if moved == 0 {
			t.Errorf("%s: none of %d seeds moved an id in: the seeds miss the move's paths", world.name, count)
		}
		releasedSeeds += released
	}
	if releasedSeeds == 0 {
		t.Errorf("no seed released an id: the seeds miss the release's paths")
	}
}
