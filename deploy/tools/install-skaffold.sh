#!/usr/bin/env bash
# install-skaffold.sh builds skaffold SKAFFOLD_VERSION (default v2.16.1) from source into
# bin/skaffold of .tools/ at the repository root, or of the folder given as the first argument
# (the same folder deploy/tools/install.sh fills with helm).
#
# `go install github.com/GoogleContainerTools/skaffold/v2/cmd/skaffold@v2.16.1` refuses the
# module because its go.mod has replace directives, so the module is downloaded through the Go
# module proxy, copied to a temporary folder and built there with its own go.mod and go.sum
# (about 10 minutes on two cores from a cold build cache).
#
# It also writes skaffold-home/.skaffold/config, a global skaffold configuration with the
# usage-metrics upload, the update check and the surveys off. Run skaffold with
# HOME=<tools>/skaffold-home (and --update-check=false) so that it never calls out nor writes
# into your own home; `make skaffold-check` does.
#
# Idempotent: nothing is built when the installed binary already reports that version.
set -euo pipefail

version="${SKAFFOLD_VERSION:-v2.16.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="${1:-$root/.tools}"
bindir="$tools/bin"
module="github.com/GoogleContainerTools/skaffold/v2"
go="${GO:-go}"

mkdir -p "$bindir" "$tools/skaffold-home/.skaffold"
cat >"$tools/skaffold-home/.skaffold/config" <<'EOF'
global:
  collect-metrics: false
  update-check: false
  survey:
    disable-prompt: true
kubeContexts: []
EOF

if [[ -x "$bindir/skaffold" ]] && [[ "$(HOME="$tools/skaffold-home" "$bindir/skaffold" version 2>/dev/null)" == "$version" ]]; then
	echo "install-skaffold: skaffold $version already in $bindir"
	exit 0
fi

command -v "$go" >/dev/null 2>&1 || { echo "install-skaffold: go not found" >&2; exit 1; }
dir="$(cd "$tools" && GOWORK=off GOFLAGS=-mod=mod "$go" mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [[ -z "$dir" || ! -f "$dir/go.mod" ]]; then
	echo "install-skaffold: could not download $module@$version" >&2
	exit 1
fi

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -R "$dir/." "$work/"
chmod -R u+w "$work"

echo "install-skaffold: building skaffold $version (about 10 minutes from a cold build cache)"
start=$(date +%s)
(
	cd "$work"
	# The module's own go.mod and go.sum, not this repository's workspace.
	GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 "$go" build -trimpath \
		-ldflags "-s -w -X $module/pkg/skaffold/version.version=$version -X $module/pkg/skaffold/version.buildDate=1970-01-01T00:00:00Z" \
		-o "$bindir/skaffold.new" ./cmd/skaffold
)
mv "$bindir/skaffold.new" "$bindir/skaffold"
echo "install-skaffold: skaffold $(HOME="$tools/skaffold-home" "$bindir/skaffold" version) in $bindir ($(($(date +%s) - start)) s)"
