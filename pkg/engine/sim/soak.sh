#!/bin/sh
# soak.sh runs the simulation over many seeds in every world it models (make soak):
# SEEDS seeds in all (default 100000), split evenly among the worlds below, in shards
# of SHARD seeds. A shard that passed is recorded in DIR (default bin/soak) and skipped
# when the soak is run again, so an interrupted soak resumes; a failed shard's output
# (each failing seed with its replay command) is kept in DIR, and the soak exits 1.
set -u
SEEDS=${SEEDS:-100000}
SHARD=${SHARD:-500}
DIR=${DIR:-bin/soak}
GO=${GO:-go}
mkdir -p "$DIR"
bin="$DIR/sim.test"
$GO test -c -o "$bin" ./pkg/engine/sim/ || exit 2

# One world a line: the flags of the simulation that make it.
worlds='-sim.rogue=false
-sim.rogue
-sim.asyncbind
-sim.rogue -sim.asyncbind
-sim.foreign=false
-sim.skew
-sim.longwork
-sim.lostanswer
-sim.gc
-sim.nsdelete
-sim.heldplan
-sim.crossns
-sim.abandon
-sim.upshare
-sim.oldrelease
-sim.paramsecret
-sim.dryrun
-sim.upshare -sim.upcreds
-sim.files
-sim.brokers
-sim.rogue -sim.asyncbind -sim.brokers
-sim.limits
-sim.rogue -sim.asyncbind -sim.limits
-sim.shards
-sim.trust
-sim.trust -sim.crossns -sim.rogue -sim.asyncbind
-sim.staticshard
-sim.staticshard -sim.shards
-sim.upgrade
-sim.upgrade -sim.heldplan -sim.brokers
-sim.migrate
-sim.migrate -sim.upgrade -sim.brokers -sim.staticshard -sim.shards
-sim.rebind
-sim.rebind -sim.asyncbind
-sim.move
-sim.rogue -sim.asyncbind -sim.skew -sim.longwork -sim.lostanswer -sim.gc -sim.nsdelete -sim.heldplan -sim.crossns -sim.abandon -sim.upshare -sim.oldrelease -sim.paramsecret -sim.dryrun -sim.upcreds -sim.files -sim.brokers -sim.limits -sim.shards -sim.staticshard -sim.upgrade -sim.rebind -sim.move'

n=$(printf '%s\n' "$worlds" | wc -l)
per=$(( (SEEDS + n - 1) / n ))
printf '%s\n' "$worlds" | while read -r flags; do
	tag=$(printf '%s' "$flags" | tr -c 'a-z0-9=' '_')
	from=1
	while [ "$from" -le "$per" ]; do
		count=$(( per - from + 1 ))
		[ "$count" -gt "$SHARD" ] && count=$SHARD
		done="$DIR/$tag.$from.pass"
		if [ ! -e "$done" ]; then
			out="$DIR/$tag.$from.out"
			# shellcheck disable=SC2086
			if "$bin" -test.run 'TestSim$' -test.timeout 0 -sim.seed="$from" -sim.seeds="$count" $flags > "$out" 2>&1; then
				mv "$out" "$done"
			else
				echo "FAIL $flags seeds $from-$((from + count - 1)): see $out"
				grep -E '^\s+sim_test.go:[0-9]+: seed' "$out" | head -5
			fi
		fi
		from=$(( from + count ))
	done
done
if ls "$DIR"/*.out > /dev/null 2>&1; then
	echo "soak: some seeds failed (their shards' output: $DIR/*.out); run again to retry only those shards"
	exit 1
fi
echo "soak: $SEEDS seeds over $n worlds passed"
