#!/usr/bin/env bash
# chart-check.sh checks charts/linkmesh offline with the tools install.sh put into .tools/ (or the
# folder given as the first argument), for every value set charts/linkmesh/ci/*-values.yaml:
#
#   1. helm lint --strict;
#   2. helm template, validated by kubeconform -strict against the offline JSON schemas of
#      .tools/schemas (Kubernetes $KUBE_VERSION and the CRDs the chart renders); a kind without
#      a schema fails;
#   3. the chart's README.md equals what helm-docs makes of it now;
#   4. the Go tests of tests/chart (rendered manifests, the call graph against the code, the
#      settings against the README, values the schema must refuse), unless CHART_GO_TESTS=0.
#
# Exits non-zero at the first failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="${1:-$root/.tools}"
chart="$root/charts/linkmesh"
# The oldest and the newest Kubernetes the chart claims (Chart.yaml's kubeVersion); install.sh
# makes a schema folder for each.
kube_versions="${KUBE_VERSIONS:-1.29.15 1.35.4}"
go="${GO:-go}"
helm="$tools/bin/helm"
kubeconform="$tools/bin/kubeconform"
helm_docs="$tools/bin/helm-docs"

for t in "$helm" "$kubeconform" "$helm_docs"; do
	[[ -x "$t" ]] || { echo "chart-check: $t missing; run deploy/tools/install.sh" >&2; exit 1; }
done
[[ -f "$tools/schemas/.stamp" ]] || { echo "chart-check: no schemas in $tools/schemas; run deploy/tools/install.sh" >&2; exit 1; }

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
start=$SECONDS

shopt -s nullglob
sets=("$chart"/ci/*-values.yaml)
[[ ${#sets[@]} -ge 3 ]] || { echo "chart-check: fewer than three value sets in $chart/ci" >&2; exit 1; }

for kube_version in $kube_versions; do
[[ -d "$tools/schemas/$kube_version" ]] || { echo "chart-check: no schemas for Kubernetes $kube_version in $tools/schemas; run deploy/tools/install.sh" >&2; exit 1; }
for values in "${sets[@]}"; do
	name="$(basename "$values" .yaml)"
	echo "== chart $name (Kubernetes $kube_version)"
	"$helm" lint --strict --quiet --kube-version "$kube_version" "$chart" -f "$values"
	"$helm" template linkmesh "$chart" --namespace linkmesh --kube-version "$kube_version" \
		-f "$values" >"$out/$name.yaml"
	if ! summary="$("$kubeconform" -strict -summary -kubernetes-version "$kube_version" \
		-schema-location "$tools/schemas/$kube_version/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
		"$out/$name.yaml")"; then
		echo "$summary" >&2
		exit 1
	fi
	echo "$summary"
	# Every rendered object was validated (none skipped for want of a schema or a file name).
	objects="$(grep -c '^kind: ' "$out/$name.yaml")"
	if ! grep -q "Summary: $objects resources\{0,1\} found in 1 file - Valid: $objects," <<<"$summary"; then
		echo "chart-check: $objects objects rendered, not all validated" >&2
		exit 1
	fi
done
done

echo "== chart README.md"
"$helm_docs" --chart-search-root "$root/charts" --template-files README.md.gotmpl \
	--dry-run --log-level warning >"$out/README.md"
if ! diff -u "$chart/README.md" "$out/README.md"; then
	echo "chart-check: charts/linkmesh/README.md is not what helm-docs makes of values.yaml; run make chart-docs" >&2
	exit 1
fi

# CHART_GO_TESTS=0 leaves them to a later go test of the tests module (make test's test-go).
if [[ "${CHART_GO_TESTS:-1}" != 0 ]]; then
	echo "== go test ./chart/..."
	(cd "$root/tests" && LINKMESH_HELM="$helm" LINKMESH_PROMTOOL="$tools/bin/promtool" LINKMESH_REQUIRE_INTEGRATION=1 \
		"$go" test -count=1 ./chart/...)
fi

echo "chart-check: ok (${#sets[@]} value sets on Kubernetes ${kube_versions// /, }, $((SECONDS - start)) s)"
