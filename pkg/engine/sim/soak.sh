#!/bin/sh
# soak.sh runs the simulation over many seeds in every world it models (make soak):
# SEEDS seeds in all (default 100000), split evenly among the worlds below, in shards
# of SHARD seeds, JOBS shards at once (default: one per core, each running its seeds
# on one core; JOBS=1 runs one shard at a time on every core). A shard that passed is
# recorded in DIR (default bin/soak) and skipped when the soak is run again, so an
# interrupted soak resumes; a failed shard's output (each failing seed with its replay
# command) is kept in DIR, and the soak exits 1. PAIRS=1 runs every pair of flags as the
# worlds instead (make soak-pairs).
set -u
SEEDS=${SEEDS:-100000}
SHARD=${SHARD:-500}
DIR=${DIR:-bin/soak}
GO=${GO:-go}
cores=$(getconf _NPROCESSORS_ONLN 2> /dev/null || echo 1)
JOBS=${JOBS:-$cores}
bin="$DIR/sim.test"

# One shard: soak.sh --shard TAG FROM COUNT FLAGS...
if [ "${1:-}" = --shard ]; then
	tag=$2 from=$3 count=$4
	shift 4
	out="$DIR/$tag.$from.out"
	if "$bin" -test.run 'TestSim$' -test.timeout 0 -sim.seed="$from" -sim.seeds="$count" "$@" > "$out" 2>&1; then
		mv "$out" "$DIR/$tag.$from.pass"
	else
		echo "FAIL $* seeds $from-$((from + count - 1)): see $out"
		grep -E '^\s+sim_test.go:[0-9]+: seed' "$out" | head -5
	fi
	exit 0
fi

mkdir -p "$DIR"
$GO test -c -o "$bin" ./pkg/engine/sim/ || exit 2

# Each flag of a world, a line each (one line may need two flags).
single='-sim.rogue
-sim.asyncbind
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
-sim.limits
-sim.shards
-sim.staticshard
-sim.upgrade
-sim.rebind
-sim.move
-sim.trust
-sim.trust -sim.renew
-sim.handreconcile
-sim.migrate
-sim.foreign=false
-sim.aslisted=1
-sim.listed=1'

# One world a line: the flags of the simulation that make it. The default world, each
# flag alone, then flags together.
worlds="-sim.rogue=false
$single
-sim.rogue -sim.asyncbind
-sim.rogue -sim.asyncbind -sim.brokers
-sim.rogue -sim.asyncbind -sim.limits
-sim.trust -sim.crossns -sim.rogue -sim.asyncbind
-sim.staticshard -sim.shards
-sim.upgrade -sim.heldplan -sim.brokers
-sim.migrate -sim.upgrade -sim.brokers -sim.staticshard -sim.shards
-sim.migrate -sim.gc -sim.nsdelete
-sim.rebind -sim.asyncbind
-sim.aslisted=1 -sim.listed=1 -sim.rogue -sim.asyncbind -sim.gc -sim.nsdelete
-sim.trust -sim.migrate -sim.upgrade -sim.heldplan -sim.oldrelease -sim.aslisted=1 -sim.listed=1 -sim.gc -sim.nsdelete -sim.rogue -sim.asyncbind
-sim.move -sim.trust -sim.rebind -sim.asyncbind
-sim.trust -sim.renew -sim.rogue -sim.asyncbind -sim.skew -sim.longwork -sim.lostanswer -sim.gc -sim.nsdelete -sim.heldplan -sim.crossns -sim.abandon -sim.upshare -sim.oldrelease -sim.paramsecret -sim.dryrun -sim.upcreds -sim.files -sim.brokers -sim.limits -sim.shards -sim.staticshard -sim.upgrade -sim.rebind
-sim.handreconcile -sim.rogue -sim.asyncbind -sim.skew -sim.longwork -sim.lostanswer -sim.gc -sim.nsdelete -sim.heldplan -sim.crossns -sim.abandon -sim.upshare -sim.oldrelease -sim.paramsecret -sim.dryrun -sim.upcreds -sim.files -sim.brokers -sim.limits -sim.shards -sim.staticshard -sim.upgrade
-sim.rogue -sim.asyncbind -sim.skew -sim.longwork -sim.lostanswer -sim.gc -sim.nsdelete -sim.heldplan -sim.crossns -sim.abandon -sim.upshare -sim.oldrelease -sim.paramsecret -sim.dryrun -sim.upcreds -sim.files -sim.brokers -sim.limits -sim.shards -sim.staticshard -sim.upgrade -sim.rebind -sim.move"

# PAIRS=1: instead, every pair of the single flags (each with every other).
if [ "${PAIRS:-0}" = 1 ]; then
	worlds=$(printf '%s\n' "$single" | awk '{ w[NR] = $0 } END { for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) print w[i] " " w[j] }')
fi

n=$(printf '%s\n' "$worlds" | wc -l)
per=$(( (SEEDS + n - 1) / n ))
# Each shard's seeds run on the cores left to it (runSeeds runs GOMAXPROCS at once).
procs=$(( cores / JOBS ))
[ "$procs" -ge 1 ] || procs=1
# The shards left to run, a line each (tag, first seed, count, the world's flags), JOBS
# at a time.
printf '%s\n' "$worlds" | while read -r flags; do
	tag=$(printf '%s' "$flags" | tr -c 'a-z0-9=' '_')
	# (A name too long for a file, the world of every flag's, is named by its checksum.)
	[ "${#tag}" -le 120 ] || tag="many_flags_$(printf '%s' "$flags" | cksum | cut -d ' ' -f 1)"
	from=1
	while [ "$from" -le "$per" ]; do
		count=$(( per - from + 1 ))
		[ "$count" -gt "$SHARD" ] && count=$SHARD
		[ -e "$DIR/$tag.$from.pass" ] || echo "$tag $from $count $flags"
		from=$(( from + count ))
	done
done | GOMAXPROCS=$procs DIR=$DIR xargs -P "$JOBS" -L 1 sh "$0" --shard
if ls "$DIR"/*.out > /dev/null 2>&1; then
	echo "soak: some seeds failed (their shards' output: $DIR/*.out); run again to retry only those shards"
	exit 1
fi
echo "soak: $SEEDS seeds over $n worlds passed"
