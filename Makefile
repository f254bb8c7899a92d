# kubectl-catalog. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
# Builds and tests do not depend on where the checkout is, so a fresh clone (CI clones
# afresh every time) reuses the build cache that another one filled.
export GOFLAGS := -trimpath $(GOFLAGS)
# Everything is built, vetted and tested without cgo, as it is released (static). It also
# halves the link of every test binary: without cgo, go links them itself instead of
# running the system's linker after it (go test -c ./pkg/cmd/get/: 10 CPU s with cgo, 5
# without). CGO_ENABLED=1 in the environment brings cgo back.
export CGO_ENABLED ?= 0
BIN_DIR := bin
BINARY := $(BIN_DIR)/kubectl-catalog
MODULE := github.com/kubectl-catalog/kubectl-catalog
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-$$(git rev-parse --short HEAD 2>/dev/null || echo dev))
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# Where the image is pushed (make image) and where "reconcile install" looks
# for this build's image when given no --image: REGISTRY/kubectl-catalog:VERSION.
# Empty by default: such a build asks for --image.
REGISTRY ?=
LDFLAGS := -s -w \
	-X $(MODULE)/pkg/version.gitVersion=$(VERSION) \
	-X $(MODULE)/pkg/version.gitCommit=$(COMMIT) \
	-X $(MODULE)/pkg/version.buildDate=$(BUILD_DATE) \
	-X $(MODULE)/pkg/version.defaultRegistry=$(REGISTRY)
# The repository's URL: the image's org.opencontainers.image.source label.
SOURCE_URL ?= https://github.com/kubectl-catalog/kubectl-catalog
# The platforms make image builds, comma-separated (linux/amd64, linux/arm64 or both);
# empty: both.
IMAGE_PLATFORMS ?=
PREFIX ?= $(HOME)/.local
CLUSTER_DIR ?= .cluster
# A count, not a duration: a duration-based -fuzztime can end in a spurious "context
# deadline exceeded" from the Go 1.26 fuzzing coordinator when the machine is busy.
FUZZTIME ?= 10000x
# The fuzz targets whose executions are slow (reconcile's run lasts up to its
# --max-duration when a forged operation is polled) run FUZZTIME_SLOW executions.
FUZZ_SLOW_TARGETS ?= FuzzRun_AnyStatusFailsItsRecordOnly
FUZZTIME_SLOW ?= 3000x
# Where test-fuzz keeps the inputs that found new code: empty, a directory of its own
# removed afterwards, so each run starts from the seed corpus (f.Add and testdata/fuzz)
# and takes as long as the last; go's fuzzing would otherwise first run again every
# input it kept from every earlier run. make fuzz keeps them in the Go build cache.
FUZZCACHEDIR ?=
# make fuzz: how many executions of each target.
FUZZ_LONGTIME ?= 200000x
# New inputs are minimized for at most this many runs: a target whose runs may last up to
# its own deadline (reconcile's) would otherwise spend a minute minimizing one input.
FUZZMINIMIZETIME ?= 20x
E2E_TIMEOUT ?= 30m
# The largest the released binary (stripped, static) may be; test-release and
# krew-validate check it.
MAX_BINARY_BYTES ?= 55000000
# Every package but the end-to-end tests.
UNIT_PKGS = $$($(GO) list ./... | grep -v /test/e2e)
# Test binaries are linked without DWARF: go test links every test binary afresh, and
# leaving the debug information out takes about a quarter off each link (panics keep
# their stack traces; build by hand to debug a test with a debugger).
TEST_LDFLAGS ?= -w

##@ Build

.PHONY: build
build: ## Build bin/kubectl-catalog (static and stripped, as released)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BINARY) ./cmd/kubectl-catalog

.PHONY: install
install: build ## Install kubectl-catalog and its kubectl completion helper into $(PREFIX)/bin
	install -d $(PREFIX)/bin
	install -m 0755 $(BINARY) $(PREFIX)/bin/kubectl-catalog
	install -m 0755 completions/kubectl_complete-catalog $(PREFIX)/bin/kubectl_complete-catalog

.PHONY: completions
completions: build ## Regenerate the shell completion scripts in completions/
	for shell in bash zsh fish powershell kubectl; do \
		case $$shell in bash) f=kubectl-catalog.bash;; zsh) f=_kubectl-catalog;; fish) f=kubectl-catalog.fish;; \
			powershell) f=kubectl-catalog.ps1;; kubectl) f=kubectl_complete-catalog;; esac; \
		$(BINARY) completion $$shell > completions/$$f; \
	done
	chmod +x completions/kubectl_complete-catalog

.PHONY: image
image: ## Build the container image (linux/amd64 and linux/arm64, or IMAGE_PLATFORMS) and push it to REGISTRY/kubectl-catalog:VERSION, offline
	@[ -n "$(REGISTRY)" ] || { echo "make image needs REGISTRY=HOST[:PORT][/PATH], the registry to push to"; exit 2; }
	$(GO) -C test/tools/release build -o $(CURDIR)/$(BIN_DIR)/catalog-image ./image
	$(BIN_DIR)/catalog-image build --dir $(CURDIR) --repo $(REGISTRY)/kubectl-catalog --tag $(VERSION) \
		--version $(VERSION) --revision $(COMMIT) --source $(SOURCE_URL) --ldflags "$(LDFLAGS)" \
		$(if $(IMAGE_PLATFORMS),--platforms $(IMAGE_PLATFORMS))

# The release tools, built from test/tools/release and test/tools/krew; rebuilt only when
# their modules change (the Go build cache makes a rebuild quick anyway).
$(BIN_DIR)/goreleaser: test/tools/release/go.mod test/tools/release/go.sum
	$(GO) -C test/tools/release build -o $(CURDIR)/$@ github.com/goreleaser/goreleaser/v2
$(BIN_DIR)/krew $(BIN_DIR)/validate-krew-manifest: test/tools/krew/go.mod test/tools/krew/go.sum
	$(GO) -C test/tools/krew build -o $(CURDIR)/$(BIN_DIR)/krew sigs.k8s.io/krew/cmd/krew
	$(GO) -C test/tools/krew build -o $(CURDIR)/$(BIN_DIR)/validate-krew-manifest sigs.k8s.io/krew/cmd/validate-krew-manifest

.PHONY: dist
dist: $(BIN_DIR)/goreleaser ## Build the release archives of every platform and the krew manifest with goreleaser (a local snapshot; no image)
	$(BIN_DIR)/goreleaser release --snapshot --clean --skip=publish,ko

.PHONY: release
release: $(BIN_DIR)/goreleaser ## Run release-check, then publish a tagged release with goreleaser: archives, krew manifest, and the image to REGISTRY
	@[ -n "$(REGISTRY)" ] || { echo "make release needs REGISTRY=HOST[:PORT][/PATH], where the image goes"; exit 2; }
	$(MAKE) --no-print-directory release-check
	$(GO) -C test/tools/release build -o $(CURDIR)/$(BIN_DIR)/catalog-image ./image
	REGISTRY=$(REGISTRY) KO_DOCKER_REPO=$(REGISTRY)/kubectl-catalog \
		$(BIN_DIR)/catalog-image serve-base -- $(BIN_DIR)/goreleaser release --clean

# The krew check of the goreleaser snapshot in the directory $$dist (a shell variable):
# krew's validator on its manifest, then this machine's archive installed with krew into
# the throw-away krew root $$root and run through the real kubectl.
KREW_CHECK = $(BIN_DIR)/validate-krew-manifest -manifest $$dist/krew/catalog.yaml -skip-install; \
	archive=$$(ls $$dist/kubectl-catalog_*_$$($(GO) env GOOS)_$$($(GO) env GOARCH).tar.gz); \
	size=$$(tar -xOzf $$archive kubectl-catalog | wc -c); \
	if [ $$size -gt $(MAX_BINARY_BYTES) ]; then \
		echo "the released binary is $$size bytes, more than MAX_BINARY_BYTES=$(MAX_BINARY_BYTES)"; exit 1; fi; \
	echo "released binary: $$size bytes (at most $(MAX_BINARY_BYTES))"; \
	KREW_ROOT=$$root $(BIN_DIR)/krew install --manifest $$dist/krew/catalog.yaml --archive $$archive; \
	kubectl=$$($(GO) run ./test/cmd/tools | tail -n 1); \
	PATH=$$root/bin:/usr/bin:/bin $$kubectl catalog version --client

.PHONY: krew-validate
krew-validate: dist $(BIN_DIR)/krew ## Validate the krew manifest of make dist, check the Windows archive, install this machine's archive with krew, run it through kubectl
	@if unzip -l dist/kubectl-catalog_*_windows_amd64.zip | grep -q kubectl_complete-catalog; then \
		echo "the Windows archive has the kubectl completion helper (a shell script)"; exit 1; fi
	dist=dist; root=$$(mktemp -d); trap 'rm -rf $$root' EXIT; \
	$(KREW_CHECK)
	@ls -l dist/*.tar.gz dist/*.zip | awk '{ printf "%8.1f MiB  %s\n", $$5 / 1048576, $$9 }'

.PHONY: release-check
release-check: $(BIN_DIR)/goreleaser ## Check the whole release without publishing: goreleaser check, the image for both platforms, make dist (every platform), krew-validate
	$(BIN_DIR)/goreleaser check
	$(GO) -C test/tools/release test -count=1 -timeout 30m ./image/... ./hostconfig/...
	$(MAKE) --no-print-directory krew-validate

##@ Test

.PHONY: test
test: lint test-unit test-fuzz test-release test-e2e ## Everything CI runs: lint, unit, fuzz smoke, release and end-to-end tests

.PHONY: test-unit
test-unit: ## Unit tests (no cluster)
	$(GO) test -count=1 -ldflags=$(TEST_LDFLAGS) $(UNIT_PKGS)

.PHONY: golden
golden: ## Regenerate the golden files (--help of every command, error output, tables) after a deliberate change; review the diff
	$(GO) test -count=1 $$($(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./pkg/... | \
		awk '/gotest.tools\/v3\/golden/ { print $$1 }') -update

.PHONY: test-release
test-release: $(BIN_DIR)/goreleaser $(BIN_DIR)/krew ## Quick release checks, this machine's platform only: goreleaser check, the image, the archive and krew manifest (validated, installed with krew, run through kubectl)
	$(BIN_DIR)/goreleaser check
	$(GO) -C test/tools/release test -count=1 ./hostconfig/...
	$(GO) -C test/tools/release test -count=1 -timeout 30m ./image/... -args -host-platform
	$(GO) -C test/tools/release build -o $(CURDIR)/$(BIN_DIR)/goreleaser-host-config ./hostconfig
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(BIN_DIR)/goreleaser-host-config --config .goreleaser.yaml --dist $$tmp/dist \
		--goos $$($(GO) env GOOS) --goarch $$($(GO) env GOARCH) > $$tmp/goreleaser.yaml; \
	$(BIN_DIR)/goreleaser release --snapshot --clean --skip=publish,ko --config $$tmp/goreleaser.yaml; \
	dist=$$tmp/dist; root=$$tmp/krew; mkdir $$root; \
	$(KREW_CHECK)

.PHONY: soak
soak: ## The engine's simulation over SOAK_SEEDS seeds (default 100000) spread over every world it models, in shards; resumes where it stopped (SOAK_DIR, default bin/soak)
	SEEDS=$(or $(SOAK_SEEDS),100000) DIR=$(or $(SOAK_DIR),bin/soak) GO=$(GO) sh pkg/engine/sim/soak.sh

.PHONY: soak-pairs
soak-pairs: ## The simulation over every pair of its world flags (435 worlds), SOAK_SEEDS seeds in all (default 43500: 100 each); resumes as soak does (SOAK_DIR, default bin/soak-pairs)
	PAIRS=1 SEEDS=$(or $(SOAK_SEEDS),43500) DIR=$(or $(SOAK_DIR),bin/soak-pairs) GO=$(GO) sh pkg/engine/sim/soak.sh

.PHONY: test-fuzz
test-fuzz: ## Run each fuzz target for FUZZTIME executions from its seed corpus (default 10000x; FUZZTIME_SLOW for FUZZ_SLOW_TARGETS)
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; cache=$(or $(FUZZCACHEDIR),$$tmp/fuzz); \
	$(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
		targets=$$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //') || true; \
		[ -n "$$targets" ] || continue; \
		bin=$$tmp/$$(basename $$dir).test; \
		$(GO) test -c -o $$bin -ldflags=$(TEST_LDFLAGS) -fuzz . $$pkg; \
		for target in $$targets; do \
			times=$(FUZZTIME); case " $(FUZZ_SLOW_TARGETS) " in *" $$target "*) times=$(FUZZTIME_SLOW);; esac; \
			echo "fuzz $$pkg $$target $$times"; \
			(cd $$dir && $$bin -test.run '^$$' -test.fuzz "^$$target\$$" -test.fuzztime $$times \
				-test.fuzzminimizetime $(FUZZMINIMIZETIME) -test.fuzzcachedir $$cache/$$pkg -test.timeout 0); \
		done; \
	done

.PHONY: fuzz
fuzz: ## Fuzz longer than make test: FUZZ_LONGTIME executions of each target, keeping what it finds in the Go build cache for the next run
	$(MAKE) --no-print-directory test-fuzz FUZZTIME=$(FUZZ_LONGTIME) FUZZTIME_SLOW=$(FUZZ_LONGTIME) FUZZCACHEDIR=$$($(GO) env GOCACHE)/fuzz

.PHONY: test-e2e
test-e2e: tools ## End-to-end tests on a real kube-apiserver, etcd and controller-manager
	$(GO) test -count=1 -ldflags=$(TEST_LDFLAGS) -timeout $(E2E_TIMEOUT) ./test/e2e/...

.PHONY: tools
tools: ## Build (or find in the cache) etcd, kube-apiserver, kube-controller-manager and kubectl
	$(GO) run ./test/cmd/tools

.PHONY: lint
lint: ## gofmt, go vet (also for Windows and macOS), go.mod tidy, the committed completion scripts and command reference current
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@$(MAKE) --no-print-directory check-layers
	GOOS=windows $(GO) vet ./cmd/... ./pkg/...
	GOOS=darwin $(GO) vet ./cmd/... ./pkg/...
	cd test/tools && $(GO) vet ./cmd/... && cd etcd && $(GO) vet .
	$(GO) -C test/tools/release vet ./image/... ./hostconfig/...
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run 'go mod tidy'"; exit 1; }
	$(MAKE) --no-print-directory check-completions
	$(MAKE) --no-print-directory check-docs

# The layers of docs/architecture.md, as "PACKAGES: FORBIDDEN IMPORTS" (regular
# expressions on import paths below the module).
LAYER_RULES := \
	'pkg/(cmd/|printers$$): pkg/(store|osb)$$' \
	'pkg/printers(/|$$): pkg/(engine|cmd|cmdutil)(/|$$)' \
	'pkg/iostreams(/|$$): pkg/' \
	'pkg/records(/|$$): pkg/((engine|doctor|reconcile|install|migrate|trust)$$|engine/(brokerclient|catalogsync|credentials|enginetest|kube|sim)(/|$$)|(cmd|cmdutil|printers|prompt|iostreams)(/|$$))' \
	'pkg/(engine|doctor|reconcile|install|migrate|trust|store|osb|apis|graph|projection|jsonschema)(/|$$): pkg/(cmd|cmdutil|printers|prompt)(/|$$)' \
	'pkg/(store|osb|apis|jsonschema|projection|graph|trust)(/|$$): pkg/(engine|doctor|reconcile|install|migrate)(/|$$)' \
	'pkg/reconcile/shard(/|$$): pkg/(engine|reconcile)(/|$$)' \
	'pkg/reconcile$$: pkg/reconcile/serve(/|$$)' \
	'pkg/engine/authority(/|$$): pkg/(engine$$|engine/(kube|catalogsync|brokerclient|credentials|enginetest|sim)(/|$$)|(doctor|reconcile|install|migrate|trust)(/|$$))' \
	'pkg/declarative(/|$$): pkg/(cmd|cmdutil|printers|prompt)(/|$$)' \
	'pkg/cmd/apply(/|$$): pkg/cmd/(provision|update|bind|unbind|deprovision|register|deregister|share|touch)(/|$$)'

.PHONY: check-layers
check-layers: ## The import rules between layers (docs/architecture.md)
	@m=$$($(GO) list -m); fail=0; \
	for rule in $(LAYER_RULES); do \
		from=$${rule%%: *}; to=$${rule#*: }; \
		bad=$$($(GO) list -f '{{.ImportPath}} {{join .Imports " "}}' ./pkg/... | sed "s#$$m/##g" | \
			awk -v from="^$$from" -v to="^$$to" '$$1 ~ from { for (i = 2; i <= NF; i++) if ($$i ~ to) print $$1 " imports " $$i }'); \
		if [ -n "$$bad" ]; then echo "layer rule \"$$rule\" broken:"; echo "$$bad"; fail=1; fi; \
	done; exit $$fail

.PHONY: docs
docs: ## Regenerate the command reference in docs/commands/ from the commands themselves
	$(GO) run ./test/cmd/docs docs/commands

.PHONY: check-docs
check-docs:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; $(GO) run ./test/cmd/docs $$tmp; \
	diff -ru docs/commands $$tmp || { echo "docs/commands is stale: run 'make docs'"; exit 1; }

.PHONY: check-completions
check-completions: build
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(BINARY) completion kubectl > $$tmp/k; $(BINARY) completion bash > $$tmp/b; \
	diff -u completions/kubectl_complete-catalog $$tmp/k; diff -u completions/kubectl-catalog.bash $$tmp/b || \
	{ echo "completions/ is stale: run 'make completions'"; exit 1; }

.PHONY: bench
bench: ## Benchmarks: every figure as a ratio to a floor measured in the same run
	$(GO) test -run '^$$' -bench . -benchmem $(UNIT_PKGS)
	$(GO) run ./test/bench

.PHONY: bench-scale
bench-scale: ## The scale figures at 100,000 records (1,000 pending) in one cluster: 12 to 30 minutes on 2 vCPUs
	$(GO) run ./test/bench -scale-only -records 100000 -shard-group=false

##@ Local cluster and demo

.PHONY: cluster-up
cluster-up: tools build ## Start a local control plane in the background; print the KUBECONFIG and PATH lines (kubectl, the plugin)
	@mkdir -p $(CLUSTER_DIR)
	@echo "export PATH=$(CURDIR)/$(BIN_DIR):$$(dirname $$($(GO) run ./test/cmd/tools | tail -n 1)):\$$PATH"
	@if [ -f $(CLUSTER_DIR)/pid ] && kill -0 $$(cat $(CLUSTER_DIR)/pid) 2>/dev/null; then \
		echo "already running"; echo "export KUBECONFIG=$$(cat $(CLUSTER_DIR)/ready)"; exit 0; fi
	$(GO) build -o $(CLUSTER_DIR)/cluster ./test/cmd/cluster
	nohup $(CLUSTER_DIR)/cluster --dir $(CLUSTER_DIR) > $(CLUSTER_DIR)/cluster.log 2>&1 & echo $$! > $(CLUSTER_DIR)/pid
	@for i in $$(seq 1 600); do \
		[ -f $(CLUSTER_DIR)/ready ] && break; \
		kill -0 $$(cat $(CLUSTER_DIR)/pid) 2>/dev/null || { cat $(CLUSTER_DIR)/cluster.log; exit 1; }; \
		sleep 0.2; done
	@grep '^export KUBECONFIG=' $(CLUSTER_DIR)/cluster.log

.PHONY: cluster-down
cluster-down: ## Stop the local control plane
	@if [ -f $(CLUSTER_DIR)/pid ]; then \
		pid=$$(cat $(CLUSTER_DIR)/pid); kill $$pid 2>/dev/null || true; \
		while kill -0 $$pid 2>/dev/null; do sleep 0.2; done; rm -f $(CLUSTER_DIR)/pid; echo "stopped"; \
	else echo "not running"; fi

# Where make broker listens: BROKER_LISTEN=127.0.0.1:9090 when 8080 is taken (the broker's
# URL in "kubectl catalog register" changes with it).
BROKER_LISTEN ?= 127.0.0.1:8080

.PHONY: broker
broker: ## Run the OSB test broker with its demo catalog on $(BROKER_LISTEN) (BROKER_LISTEN=HOST:PORT for another), operations taking 3s (see docs/test-broker.md)
	$(GO) run ./test/broker/cmd/osb-test-broker --listen $(BROKER_LISTEN) --username $${BROKER_USERNAME:-demo} --password $${BROKER_PASSWORD:-demo} \
		--async-delay $${BROKER_ASYNC_DELAY:-3s}

.PHONY: demo
demo: build tools ## Run the main job end to end on a throw-away local control plane
	./test/demo/demo.sh

##@ Other

.PHONY: clean
clean: cluster-down ## Remove build output and the local cluster's files (the tool cache stays)
	rm -rf $(BIN_DIR) dist $(CLUSTER_DIR)

.PHONY: help
# The variables the targets' descriptions name, as $(NAME): help prints their values.
HELP_VARS = $(sort $(shell sed -n 's/^[a-zA-Z_0-9-]*:.*\#\# //p' $(MAKEFILE_LIST) | grep -o '\$$([A-Z_]*)' | tr -d '$$()'))
help: ## Show this help (in colour on a terminal)
	@on=; off=; if [ -t 1 ]; then on=$$(printf '\033[36m'); off=$$(printf '\033[0m'); fi; \
	awk -v on="$$on" -v off="$$off" -v vars='$(foreach v,$(HELP_VARS),$(v)=$($(v));)' \
		'BEGIN { FS = ":.*##"; n = split(vars, kv, ";"); \
			for (i = 1; i <= n; i++) if (kv[i] != "") { p = index(kv[i], "="); val[substr(kv[i], 1, p - 1)] = substr(kv[i], p + 1) } \
			printf "Usage: make <target>\n" } \
		/^[a-zA-Z_0-9-]+:.*?##/ { d = $$2; \
			while (match(d, /\$$\([A-Z_]+\)/)) { k = substr(d, RSTART + 2, RLENGTH - 3); d = substr(d, 1, RSTART - 1) val[k] substr(d, RSTART + RLENGTH) } \
			printf "  %s%-16s%s %s\n", on, $$1, off, d } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
