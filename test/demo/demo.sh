#!/usr/bin/env bash
# The main job of kubectl catalog, end to end and unattended, on a throw-away
# local control plane. Each command is printed before it runs. Everything the
# demo starts is stopped, and its files removed, however it ends.
set -euo pipefail
cd "$(dirname "$0")/../.."

work=$(mktemp -d "${TMPDIR:-/tmp}/kubectl-catalog-demo-XXXXXX")
cluster_pid=""
cleanup() {
	if [ -n "$cluster_pid" ]; then
		kill "$cluster_pid" 2>/dev/null || true
		wait "$cluster_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

step() {
	printf '\n\033[1m$ %s\033[0m\n' "$*"
	"$@"
}

echo "Starting a local control plane (etcd, kube-apiserver, kube-controller-manager)..."
go build -o "$work/cluster" ./test/cmd/cluster
"$work/cluster" --dir "$work/cluster-dir" > "$work/cluster.log" 2>&1 &
cluster_pid=$!
for _ in $(seq 1 600); do
	[ -f "$work/cluster-dir/ready" ] && break
	kill -0 "$cluster_pid" 2>/dev/null || { cat "$work/cluster.log"; exit 1; }
	sleep 0.2
done
[ -f "$work/cluster-dir/ready" ] || { echo "the control plane did not start"; cat "$work/cluster.log"; exit 1; }
export KUBECONFIG
KUBECONFIG=$(cat "$work/cluster-dir/ready")

# kubectl discovers the plugin on PATH, as it would after a krew install.
kubectl_dir=$(dirname "$(go run ./test/cmd/tools | tail -n 1)")
mkdir -p "$work/bin"
cp bin/kubectl-catalog "$work/bin/"
export PATH="$work/bin:$kubectl_dir:$PATH"

step kubectl plugin list
step kubectl catalog version
step kubectl catalog --help

echo
echo "Demo finished; stopping the control plane."
