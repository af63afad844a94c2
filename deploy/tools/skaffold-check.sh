#!/usr/bin/env bash
# skaffold-check.sh checks skaffold.yaml offline, without building skaffold:
#
#   1. skaffold.yaml (every profile included) against skaffold's own JSON schema of its
#      apiVersion, taken from the skaffold module zip (docs-v2/content/en/schemas) through the Go
#      module proxy, validated strictly by kubeconform;
#   2. the dev profile's datastores (the chart deploy/dev/datastores, rendered) against the
#      Kubernetes schemas of install.sh;
#   3. each profile's chart render with its values files and the images skaffold would set
#      (tests/chart TestSkaffoldProfiles), unless CHART_GO_TESTS=0 (make test runs it with the
#      other Go tests).
#
# Building skaffold to run `skaffold render` took about 10 minutes on every fresh machine; it is
# still there for running skaffold (deploy/tools/install-skaffold.sh, make skaffold-render).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="${1:-$root/.tools}"
version="${SKAFFOLD_VERSION:-v2.16.1}"
go="${GO:-go}"
kubeconform="$tools/bin/kubeconform"
[[ -x "$kubeconform" ]] || { echo "skaffold-check: $kubeconform missing; run deploy/tools/install.sh" >&2; exit 1; }

api="$(sed -n 's/^apiVersion: skaffold\/\(v[0-9a-z]*\)$/\1/p' "$root/skaffold.yaml")"
[[ -n "$api" ]] || { echo "skaffold-check: no skaffold apiVersion in skaffold.yaml" >&2; exit 1; }
dir="$(cd "$tools" && GOWORK=off GOFLAGS=-mod=mod "$go" mod download -json "github.com/GoogleContainerTools/skaffold/v2@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
schema="$dir/docs-v2/content/en/schemas/$api.json"
[[ -f "$schema" ]] || { echo "skaffold-check: skaffold $version has no schema $api" >&2; exit 1; }

echo "== skaffold.yaml against skaffold $version's schema $api"
"$kubeconform" -strict -summary -schema-location "$schema" "$root/skaffold.yaml"
out="$(mktemp --suffix=.yaml)"
trap 'rm -f "$out"' EXIT
for kube in "$tools"/schemas/*/; do
	kube="$(basename "$kube")"
	echo "== deploy/dev/datastores (Kubernetes $kube)"
	"$tools/bin/helm" lint --strict --quiet --kube-version "$kube" "$root/deploy/dev/datastores"
	"$tools/bin/helm" template linkmesh-datastores "$root/deploy/dev/datastores" --kube-version "$kube" >"$out"
	summary="$("$kubeconform" -strict -summary -kubernetes-version "$kube" \
		-schema-location "$tools/schemas/$kube/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$out")" || { echo "$summary" >&2; exit 1; }
	echo "$summary"
	objects="$(grep -c '^kind: ' "$out")"
	grep -q "Valid: $objects," <<<"$summary" || { echo "skaffold-check: $objects objects rendered, not all validated" >&2; exit 1; }
done
if [[ "${CHART_GO_TESTS:-1}" != 0 ]]; then
	echo "== go test ./chart -run TestSkaffoldProfiles"
	(cd "$root/tests" && LINKMESH_HELM="$tools/bin/helm" LINKMESH_REQUIRE_INTEGRATION=1 "$go" test -count=1 -run TestSkaffoldProfiles ./chart/)
fi
echo "skaffold-check: ok"
