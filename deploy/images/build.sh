#!/usr/bin/env bash
# build.sh builds linkmesh's service images offline, without a container engine, into the
# OCI image layout .linkmesh/images/oci (IMAGE_LAYOUT overrides it), with the builder in
# tests/cmd/imagebuild (go-containerregistry).
#
#   deploy/images/build.sh [imagebuild flags] [service...]   # all six services by default
#
# Each image: the service's static binary (CGO_ENABLED=0, -trimpath, -ldflags "-s -w") as
# /usr/local/bin/<svc>, /etc/passwd and /etc/group with the user nonroot (65532:65532), and
# the build machine's /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates package);
# nothing else. Images are named linkmesh/<svc>:dev (IMAGE_REPO and IMAGE_TAG override).
# IMAGE_TARS=DIR also writes DIR/<svc>.tar (docker-archive, for `podman load`).
#
# As skaffold's custom builder (skaffold.yaml) it gets $IMAGE (the reference to build),
# $PUSH_IMAGE and $PLATFORMS: it builds the one service named as argument under $IMAGE into
# the layout and, when $PUSH_IMAGE is true, pushes it to that registry (remote.Write with the
# usual Docker credentials). There is no Docker daemon to load the image into.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
go="${GO:-go}"
builder="$root/bin/imagebuild"

# The builder itself, rebuilt only when its sources changed (go build's cache decides).
(cd "$root/tests" && "$go" build -o "$builder" ./cmd/imagebuild)

args=(-root "$root" -layout "${IMAGE_LAYOUT:-$root/.linkmesh/images/oci}" -go "$go")
[[ -n "${IMAGE_TARS:-}" ]] && args+=(-tar "$IMAGE_TARS")
if [[ -n "${IMAGE:-}" ]]; then
	# skaffold: one artifact per call.
	args+=(-image "$IMAGE" -platform "${PLATFORMS:-linux/amd64}")
	[[ "${PUSH_IMAGE:-false}" == "true" ]] && args+=(-push)
else
	args+=(-repo "${IMAGE_REPO:-linkmesh}" -tag "${IMAGE_TAG:-dev}")
	[[ -n "${PLATFORMS:-}" ]] && args+=(-platform "$PLATFORMS")
fi
exec "$builder" "${args[@]}" "$@"
