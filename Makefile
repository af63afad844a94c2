# linkmesh — one-machine run, tests, benchmarks and checks. `make help` lists the targets.

SERVICES := gateway auth link analytics moderation quota
MODULES  := pkg $(addprefix services/,$(SERVICES)) tests
BIN      := $(CURDIR)/bin
DATA     ?= $(CURDIR)/.linkmesh
GO       ?= go
# A folder holding the store's pinned source archives (deploy/local/install-store.sh); without
# one, the script fetches the pinned commits from upstream.
STORE_MIRROR ?= $(wildcard $(CURDIR)/../shared/vendor)
# Pinned chart tools and offline Kubernetes schemas (deploy/tools/install.sh).
TOOLS    := $(CURDIR)/.tools
# The Go tests of tests/chart run inside chart-check, except under `make test`, where test-go
# runs them with every other test.
CHART_GO_TESTS ?= 1

.DEFAULT_GOAL := help
WEB      := services/gateway/web

.PHONY: help deps web web-deps web-npm geoip build run test test-unit test-go test-isolated bench bench-owner bench-create bench-admin soak drills fmt lint tidy clean tools chart-check chart-docs images images-runtime skaffold-check skaffold-render

help: ## List every target with what it does
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## Install what local runs and tests need (redis-server, PostgreSQL 15 with DocumentDB built once from pinned sources, wrk, curl, openssl) if missing
	@deploy/local/install-deps.sh
	@deploy/local/install-store.sh $(DATA)/store-build $(STORE_MIRROR)

web-deps: ## Install what the web application's tests need: Chromium and npm if missing, then its locked npm packages
	@deploy/local/install-deps.sh --test
	@$(MAKE) --no-print-directory web-npm

web-npm: ## Install the web application's locked npm packages (esbuild, preact, uPlot, axe-core) into services/gateway/web/node_modules
	@cd $(WEB) && if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else echo "web-npm: up to date"; fi

web: web-npm ## Rebuild the web application into services/gateway/internal/webapp/dist (commit the result; a test compares it with a fresh build)
	@cd $(WEB) && node build.mjs

build: ## Build every service and the local tools into ./bin
	@mkdir -p $(BIN)
	@for s in $(SERVICES); do $(GO) build -o $(BIN)/$$s ./services/$$s/cmd/$$s || exit 1; done
	@cd tests && $(GO) build -o $(BIN)/devstack ./cmd/devstack && $(GO) build -o $(BIN)/benchredirect ./cmd/benchredirect && $(GO) build -o $(BIN)/benchowner ./cmd/benchowner && $(GO) build -o $(BIN)/benchcreate ./cmd/benchcreate && $(GO) build -o $(BIN)/benchintegrators ./cmd/benchintegrators && $(GO) build -o $(BIN)/benchadmin ./cmd/benchadmin && $(GO) build -o $(BIN)/soak ./cmd/soak

run: deps build geoip ## Run the whole system on this machine (gateway on :8080, embedded datastores in ./.linkmesh)
	@LINKMESH_GEOIP_DB=$${LINKMESH_GEOIP_DB:-$(DATA)/geoip/countries.mmdb} $(BIN)/devstack run -data $(DATA) -bin $(BIN)

geoip: ## Fetch the country database (ip-location-db, CC BY 4.0) into ./.linkmesh/geoip once
	@deploy/local/fetch-geoip.sh $(DATA)/geoip

test: CHART_GO_TESTS := 0
test: deps web-deps build geoip lint chart-check skaffold-check images ## Lint, check the Helm chart, then every test: unit, integration (real Redis + FerretDB/PostgreSQL), end-to-end
	@LINKMESH_TEST_GEOIP_DB=$(DATA)/geoip/countries.mmdb $(BIN)/devstack exec -- $(MAKE) --no-print-directory test-go

test-go: test-isolated ## (inside `make test`) go test -race over every module against the running datastores
	@for m in $(MODULES); do \
		echo "== go test $$m"; \
		(cd $$m && LINKMESH_REQUIRE_INTEGRATION=1 LINKMESH_BIN_DIR=$(BIN) LINKMESH_HELM=$(TOOLS)/bin/helm LINKMESH_PROMTOOL=$(TOOLS)/bin/promtool $(GO) test -race -count=1 -timeout 15m ./...) || exit 1; \
	done

test-unit: ## Run only the tests that need no datastore (integration tests skip)
	@for m in $(MODULES); do (cd $$m && $(if $(wildcard $(TOOLS)/bin/helm),LINKMESH_HELM=$(TOOLS)/bin/helm) $(GO) test -count=1 ./...) || exit 1; done

test-isolated: ## Check that every module builds and vets on its own (GOWORK=off)
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) vet ./...) || exit 1; done

bench: deps build geoip ## Benchmark warm GET /{code} against a bare Fiber 302 (the handler chain, each click's steps, the whole system), then creation throughput, then the integrators' API (token vs session, bulk vs one, webhook lag) (every figure reported; exit 1 on a miss)
	@LINKMESH_TEST_GEOIP_DB=$(DATA)/geoip/countries.mmdb $(BIN)/devstack exec -- sh -c 'cd services/gateway && $(GO) test -run NONE -bench "Redirect|Enrich|Recorder" -benchmem ./internal/http/ ./internal/clicks/'
	@status=0; $(BIN)/benchredirect -bin $(BIN) || status=1; $(BIN)/benchcreate -bin $(BIN) || status=1; $(BIN)/benchintegrators -bin $(BIN) || status=1; exit $$status

bench-create: deps build ## Creations/s through the gateway (many callers, one signed-in caller) against the store's own rates (an insert, an upsert, a creation's four operations)
	@$(BIN)/benchcreate -bin $(BIN)

bench-admin: deps build ## The admin overview and link list with 1,000 and with 100,000 links stored (target: the overview's p50 grows ≤ 2x)
	@$(BIN)/benchadmin -bin $(BIN) -small 1000 -links 100000

bench-owner: deps build ## Time an owner's list and dashboard with 20,000 links (p50 target 50 ms; slow on FerretDB today)
	@$(BIN)/benchowner -bin $(BIN) -links 20000 -samples 20

soak: deps build ## 10 minutes of mixed load (redirects, creations, logins, reads, reports): only intended answers, per-request p99, memory and goroutines of every service flat, every click stored
	@$(BIN)/soak -bin $(BIN) -duration $${SOAK_DURATION:-10m}

drills: deps build geoip ## The fault drills and the hostile input, longer: a 10-minute fuzz of the gateway (LINKMESH_FUZZ_DURATION), the crash and outage drills, the Redis Cluster run
	@LINKMESH_TEST_GEOIP_DB=$(DATA)/geoip/countries.mmdb $(BIN)/devstack exec -- bash -c 'cd tests && LINKMESH_REQUIRE_INTEGRATION=1 LINKMESH_BIN_DIR=$(BIN) LINKMESH_FUZZ_DURATION=$${LINKMESH_FUZZ_DURATION:-10m} $(GO) test -count=1 -timeout 60m -v -run "TestHostileInputCorpus|TestMalformedHTTP|TestFuzzGateway|TestClicksSurviveAnalyticsCrash|TestWarmRedirectsOutliveTheLinkService" ./e2e/ && LINKMESH_REQUIRE_INTEGRATION=1 LINKMESH_BIN_DIR=$(BIN) $(GO) test -count=1 -v ./cluster/ ./drills/'

tools: ## Build the pinned chart tools (helm, kubeconform, helm-docs) and the offline Kubernetes JSON schemas into ./.tools
	@deploy/tools/install.sh $(TOOLS)

chart-check: tools ## Check the Helm chart offline: helm lint --strict, helm template | kubeconform -strict for every ci/ value set, its README, tests/chart
	@CHART_GO_TESTS=$(CHART_GO_TESTS) deploy/tools/chart-check.sh $(TOOLS)

images: ## Build the six service images offline, without a container engine, into the OCI layout .linkmesh/images/oci (deploy/images/build.sh)
	@IMAGE_LAYOUT=$(DATA)/images/oci GO=$(GO) deploy/images/build.sh

images-runtime: ## Install podman (runc) to start the images in tests/images; without it they start chrooted (root either way)
	@deploy/images/install-runtime.sh

skaffold-check: tools ## Check skaffold.yaml offline without building skaffold: its own JSON schema (from the skaffold module), the dev datastores, each profile's chart render
	@CHART_GO_TESTS=$(CHART_GO_TESTS) deploy/tools/skaffold-check.sh $(TOOLS)

skaffold-render: tools ## skaffold render, offline, with skaffold itself (builds skaffold v2.16.1 into .tools once, about 10 minutes)
	@deploy/tools/install-skaffold.sh $(TOOLS)
	@HOME=$(TOOLS)/skaffold-home PATH=$(TOOLS)/bin:$$PATH skaffold render -p dev --offline=true --digest-source=tag --update-check=false --output $(TOOLS)/skaffold-render.yaml
	@for s in $(SERVICES); do grep -q "image: linkmesh/$$s:" $(TOOLS)/skaffold-render.yaml || { echo "skaffold render: no image linkmesh/$$s"; exit 1; }; done; echo "skaffold render: ok"

chart-docs: tools ## Regenerate charts/linkmesh/README.md from Chart.yaml, values.yaml and README.md.gotmpl (helm-docs)
	@$(TOOLS)/bin/helm-docs --chart-search-root charts --template-files README.md.gotmpl --log-level warning

fmt: ## Format all Go code
	@gofmt -w $(MODULES)

lint: ## go vet and staticcheck (pinned in tests/go.mod) over every module
	@test -z "$$(gofmt -l $(MODULES))" || (echo "gofmt needed:"; gofmt -l $(MODULES); exit 1)
	@for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@cd tests && $(GO) tool staticcheck $(addprefix github.com/linkmesh/linkmesh/,$(addsuffix /...,$(MODULES)))

tidy: ## go mod tidy in every module
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy) || exit 1; done

clean: ## Remove built binaries (keeps ./.linkmesh data)
	@rm -rf $(BIN)
