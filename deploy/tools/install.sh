#!/usr/bin/env bash
# install.sh installs the pinned tools that check the Helm chart offline, into .tools/ at the
# repository root (or the folder given as the first argument):
#
#   bin/helm         helm.sh/helm/v3 (go install, about 4 minutes on two cores)
#   bin/kubeconform  github.com/yannh/kubeconform (go install, under a minute)
#   bin/helm-docs    github.com/norwoodj/helm-docs (go install, under a minute)
#   bin/promtool     github.com/prometheus/prometheus/cmd/promtool, for the alert rules' unit
#                    tests (built in the module's own tree with its go.mod, which has replace
#                    directives go install refuses; without service discovery, which promtool
#                    test and check rules never use: about a minute)
#   schemas/<v>/     strict JSON schemas for kubeconform, one folder per Kubernetes version
#                    (without the leading v), made without the internet from
#                    api/openapi-spec/swagger.json of the k8s.io/kubernetes module and the CRDs
#                    of the prometheus-operator and gateway-api modules (all through the Go
#                    module proxy), converted by tests/chart/schemagen
#
# Idempotent: a tool whose installed binary was built from the pinned module version is left
# alone, and the schemas are made again only when a pinned version or the converter changes.
# Needs only Go (and the Go module proxy).
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
KUBECONFORM_VERSION="${KUBECONFORM_VERSION:-v0.8.0}"
HELM_DOCS_VERSION="${HELM_DOCS_VERSION:-v1.14.2}"
# Prometheus v3.x's Go module version (v0.3xx.y); the same as tests/go.mod's.
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.315.1}"
# The Kubernetes APIs the chart is validated against (the oldest and the newest it claims in
# Chart.yaml's kubeVersion), and the CRDs it renders.
KUBERNETES_VERSIONS="${KUBERNETES_VERSIONS:-v1.29.15 v1.35.4}"
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
GATEWAY_API_VERSION="${GATEWAY_API_VERSION:-v1.4.1}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="${1:-$root/.tools}"
bindir="$tools/bin"
schemadir="$tools/schemas"
go="${GO:-go}"

command -v "$go" >/dev/null 2>&1 || { echo "install: go not found" >&2; exit 1; }
mkdir -p "$bindir"

# Outside this repository's workspace, so no go.work or go.mod of ours takes part.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# built_from prints the module version a Go binary was built from, empty if it is missing.
built_from() {
	[[ -x "$1" ]] || return 0
	"$go" version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m {print $3}'
}

# install_tool NAME MODULE PACKAGE VERSION [LDFLAGS] builds PACKAGE@VERSION into $bindir/NAME.
install_tool() {
	local name="$1" module="$2" pkg="$3" version="$4" ldflags="${5:-}"
	if [[ "$(built_from "$bindir/$name" "$module")" == "$version" ]]; then
		echo "install: $name $version already in $bindir"
		return
	fi
	echo "install: building $name $version"
	local start=$SECONDS
	(cd "$scratch" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN="$bindir" \
		"$go" install -trimpath -ldflags "-s -w $ldflags" "$pkg@$version")
	echo "install: $name $version in $bindir/$name ($((SECONDS - start)) s)"
}

# Helm's release builds stamp the version and the Kubernetes version its client libraries
# speak (the default of --kube-version); a plain go install would say v1.20.
helm_k8s_minor() {
	local v
	v="$(cd "$scratch" && GOWORK=off "$go" mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
	# k8s.io/client-go v0.N.x is Kubernetes 1.N.
	awk '$1 == "k8s.io/client-go" {split($2, p, "."); print p[2]; exit}' "$v"
}

if [[ "$(built_from "$bindir/helm" helm.sh/helm/v3)" != "$HELM_VERSION" ]]; then
	minor="$(helm_k8s_minor)"
	[[ -n "$minor" ]] || { echo "install: cannot read helm's client-go version" >&2; exit 1; }
	install_tool helm helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "$HELM_VERSION" \
		"-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
else
	echo "install: helm $HELM_VERSION already in $bindir"
fi
install_tool kubeconform github.com/yannh/kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION" \
	"-X main.version=$KUBECONFORM_VERSION"
# helm-docs prints its version after a "v" of its own.
install_tool helm-docs github.com/norwoodj/helm-docs github.com/norwoodj/helm-docs/cmd/helm-docs "$HELM_DOCS_VERSION" \
	"-X main.version=${HELM_DOCS_VERSION#v}"

# promtool is built as the main module of its own source tree, which leaves no module version
# in the binary: a stamp file beside it records what it was built from.
if [[ -x "$bindir/promtool" && -f "$bindir/promtool.version" && "$(cat "$bindir/promtool.version")" == "$PROMETHEUS_VERSION" ]]; then
	echo "install: promtool $PROMETHEUS_VERSION already in $bindir"
else
	echo "install: building promtool $PROMETHEUS_VERSION"
	start=$SECONDS
	src="$(cd "$scratch" && GOWORK=off "$go" mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[[ -n "$src" && -f "$src/go.mod" ]] || { echo "install: could not download prometheus $PROMETHEUS_VERSION" >&2; exit 1; }
	cp -R "$src" "$scratch/prometheus"
	chmod -R u+w "$scratch/prometheus"
	(cd "$scratch/prometheus" && GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
		"$go" build -trimpath -tags remove_all_sd -ldflags "-s -w" -o "$bindir/promtool.new" ./cmd/promtool)
	mv "$bindir/promtool.new" "$bindir/promtool"
	echo "$PROMETHEUS_VERSION" >"$bindir/promtool.version"
	echo "install: promtool $PROMETHEUS_VERSION in $bindir/promtool ($((SECONDS - start)) s)"
fi

# The schemas. The stamp names every input, the converter's source included.
converter="$root/tests/chart/schemagen"
stamp="kubernetes=${KUBERNETES_VERSIONS// /,} prometheus-operator=$PROMETHEUS_OPERATOR_VERSION gateway-api=$GATEWAY_API_VERSION converter=$(cat "$converter"/*.go | sha256sum | cut -c1-16)"
if [[ -f "$schemadir/.stamp" && "$(cat "$schemadir/.stamp")" == "$stamp" ]]; then
	echo "install: schemas already in $schemadir ($stamp)"
	exit 0
fi

# module_dir MODULE@VERSION prints the folder the module proxy's zip was unpacked into.
module_dir() {
	local d
	d="$(cd "$scratch" && GOWORK=off "$go" mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[[ -n "$d" && -d "$d" ]] || { echo "install: could not download $1" >&2; exit 1; }
	echo "$d"
}

echo "install: making JSON schemas ($stamp)"
start=$SECONDS
promop="$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")"
gwapi="$(module_dir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")"
rm -rf "$schemadir.new"
mkdir -p "$schemadir.new"
for version in $KUBERNETES_VERSIONS; do
	k8s="$(module_dir "k8s.io/kubernetes@$version")"
	(cd "$root/tests" && GOWORK=off "$go" run ./chart/schemagen -out "$schemadir.new/${version#v}" \
		-swagger "$k8s/api/openapi-spec/swagger.json" \
		-crd "$promop/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" \
		-crd "$promop/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" \
		-crd "$gwapi/config/crd/standard/gateway.networking.k8s.io_httproutes.yaml")
done
echo "$stamp" >"$schemadir.new/.stamp"
rm -rf "$schemadir"
mv "$schemadir.new" "$schemadir"
echo "install: $(find "$schemadir" -name '*.json' | wc -l) schemas in $schemadir ($((SECONDS - start)) s)"
