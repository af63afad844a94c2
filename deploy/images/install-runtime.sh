#!/usr/bin/env bash
# install-runtime.sh installs Debian's podman (with crun and runc) if missing, to run the
# images deploy/images/build.sh writes. Idempotent; needs root (or sudo).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { echo "install-runtime: run as root" >&2; exit 1; }
	SUDO="sudo"
fi

missing=()
for tool in podman crun runc; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
	$SUDO apt-get update -q >/dev/null
	$SUDO apt-get install -y -q --no-install-recommends podman crun runc fuse-overlayfs slirp4netns uidmap >/dev/null
fi
echo "install-runtime: $(podman --version), crun $(crun --version | head -1 | awk '{print $3}'), runc $(runc --version | head -1 | awk '{print $3}')"
