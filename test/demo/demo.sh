#!/usr/bin/env bash
# The main job of kubectl catalog, end to end and unattended, on a throw-away
# local control plane. Each command is printed before it runs. Everything the
# demo starts is stopped, and its files removed, however it ends.
set -euo pipefail
cd "$(dirname "$0")/../.."

work=$(mktemp -d "${TMPDIR:-/tmp}/kubectl-catalog-demo-XXXXXX")
cluster_pid=""
broker_pid=""
cleanup() {
	if [ -n "$broker_pid" ]; then
		kill "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
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
# Only directories that exist: kubectl warns about every other PATH entry.
clean_path=""
IFS=: read -ra path_dirs <<< "$PATH"
for d in "${path_dirs[@]}"; do [ -d "$d" ] && clean_path="$clean_path:$d"; done
export PATH="$work/bin:$kubectl_dir$clean_path"

echo "Starting the demo OSB broker on loopback..."
go build -o "$work/osb-test-broker" ./test/broker/cmd/osb-test-broker
broker_user=demo
broker_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
"$work/osb-test-broker" --listen 127.0.0.1:0 --username "$broker_user" --password "$broker_password" \
	--async-delay 3s --print-url-file "$work/broker-url" --quiet > "$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 1 100); do
	[ -s "$work/broker-url" ] && break
	kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log"; exit 1; }
	sleep 0.1
done
[ -s "$work/broker-url" ] || { echo "the broker did not start"; cat "$work/broker.log"; exit 1; }
broker_url=$(cat "$work/broker-url")
echo "Demo broker listening at $broker_url"

step kubectl plugin list
step kubectl catalog version

# Set the catalog up once: its namespace, the cluster id and the records' trust policy,
# with which reconcile acts on each record with its author's rights.
step kubectl catalog init

# The broker's credentials go into a Secret; the broker record names it.
step kubectl create secret generic demo-broker-auth -n catalog-system \
	--from-literal=username="$broker_user" --from-literal=password="$broker_password"
step kubectl catalog register demo --url "$broker_url" --basic-auth-secret demo-broker-auth
step kubectl catalog get brokers
step kubectl catalog marketplace
step kubectl catalog describe plan postgresql/standard

step kubectl create namespace demo
step kubectl catalog provision db -n demo --class postgresql --plan standard -p storage_gb=20 --wait
step kubectl catalog get instances -n demo
step kubectl catalog describe instance db -n demo
step kubectl get configmaps -n demo -l app.kubernetes.io/managed-by=kubectl-catalog

# An application to give the credentials to. Without a kubelet its pods never
# run; the Deployment is here to show what the binding changes in it.
step kubectl create deployment web -n demo --image=web:demo
step kubectl catalog bind db -n demo --to deployment/web --wait
step kubectl catalog get bindings -n demo
# The Secret's keys and the length of each value, never the values themselves.
step kubectl catalog describe binding db -n demo
step kubectl get deployment web -n demo \
	-o jsonpath='{range .spec.template.spec.volumes[*]}volume {.name} from Secret {.secret.secretName}{"\n"}{end}{range .spec.template.spec.containers[*].volumeMounts[*]}mounted at {.mountPath}{"\n"}{end}{range .spec.template.spec.containers[*].env[*]}env {.name}={.value}{"\n"}{end}'

# A Pod of your own takes the same Secret: every key as an environment variable.
cat > "$work/app.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
    - name: app
      image: app:demo
      envFrom:
        - secretRef:
            name: db
YAML
step cat "$work/app.yaml"
step kubectl apply -n demo -f "$work/app.yaml"
step kubectl get pod app -n demo -o jsonpath='{.spec.containers[0].envFrom[0].secretRef.name}{"\n"}'
step kubectl delete pod app -n demo --wait=false

step kubectl catalog unbind db -n demo --wait
step kubectl get deployment web -n demo -o jsonpath='volumes: {.spec.template.spec.volumes[*].name}{"\n"}'
step kubectl catalog deprovision db -n demo --yes --wait
step kubectl catalog get instances -n demo

# Something interrupted: a provision stopped with Ctrl-C (SIGINT) while the broker was
# still working on it. Its record keeps what is left to do.
printf '\n\033[1m$ %s\033[0m\n' "kubectl catalog provision cache -n demo --class postgresql --plan standard -p storage_gb=20 --wait   # then Ctrl-C"
kubectl catalog provision cache -n demo --class postgresql --plan standard -p storage_gb=20 --wait > "$work/provision.log" 2>&1 &
provision_pid=$!
for _ in $(seq 1 300); do
	# "Provisioning: ..." once the broker has accepted the provision and works on it.
	grep -q '^Provisioning: ' "$work/provision.log" && break
	kill -0 "$provision_pid" 2>/dev/null || break
	sleep 0.1
done
kill -INT "$provision_pid" 2>/dev/null || true
status=0
wait "$provision_pid" || status=$?
cat "$work/provision.log"
echo "^C (exit code $status)"
step kubectl catalog get instances -n demo
# reconcile finishes it, with the authority of the record's author (the trust policy of
# "kubectl catalog init" vouches for them).
step kubectl catalog reconcile -n demo
step kubectl catalog get instances -n demo
# The plain reconcile above waited for the operation's next poll and finished it.
if ! kubectl catalog get instances -n demo | grep -Eq '^cache[[:space:]].*[[:space:]]Ready([[:space:]]|$)'; then
	echo "error: instance \"cache\" is not Ready after \"kubectl catalog reconcile\"" >&2
	exit 1
fi
step kubectl catalog deprovision cache -n demo --yes --wait
step kubectl catalog deregister demo
step kubectl delete secret demo-broker-auth -n catalog-system
step kubectl delete namespace demo

echo
echo "Demo finished; stopping the broker and the control plane."
