#!/usr/bin/env bash
# install-deps.sh ensures this machine has what local runs and tests need:
# redis-server, wrk (for benchmarks), and curl with the CA certificates (to fetch
# the GeoIP database), openssl (the chart test makes internal keys the way the
# chart's README tells operators to); with --test also Chromium (the web application's
# browser tests) and npm (its build and axe-core). The MongoDB wire-protocol store (PostgreSQL
# with DocumentDB) is install-store.sh's.
#
# It is idempotent: it installs only what is missing, runs apt-get update at
# most once, and prints one line per tool.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

# SUDO is empty when we are root, so commands run directly; otherwise sudo
# is required because apt-get needs root.
SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "install-deps: not root and sudo is not available; run as root" >&2
		exit 1
	fi
fi

updated=0

# apt_install installs the given packages, running apt-get update once per
# script run so repeated installs don't refetch the package lists.
apt_install() {
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "install-deps: apt-get not found; install $* with your package manager" >&2
		exit 1
	fi
	if [[ "$updated" -eq 0 ]]; then
		$SUDO apt-get update -q >/dev/null
		updated=1
	fi
	$SUDO apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

# find_binary prints the path of a binary found in PATH, /usr/bin or /usr/sbin.
find_binary() {
	local name="$1" dir
	if command -v "$name" >/dev/null 2>&1; then
		command -v "$name"
		return 0
	fi
	for dir in /usr/bin /usr/sbin; do
		if [[ -x "$dir/$name" ]]; then
			echo "$dir/$name"
			return 0
		fi
	done
	return 1
}

# ensure checks for a tool with the given finder and installs its package if
# the finder fails.
ensure() {
	local tool="$1" package="$2" finder="$3" path
	if path="$($finder)"; then
		echo "found     $tool: $path"
		return 0
	fi
	apt_install "$package"
	if ! path="$($finder)"; then
		echo "install-deps: installed $package but $tool is still missing" >&2
		exit 1
	fi
	echo "installed $tool: $path"
}

find_redis() { find_binary redis-server; }
# The Redis Cluster test forms its cluster with redis-cli.
find_redis_cli() { find_binary redis-cli; }
find_curl() { find_binary curl; }
# The GeoIP fetch needs the system's CA bundle for HTTPS.
find_cacerts() { [[ -s /etc/ssl/certs/ca-certificates.crt ]] && echo /etc/ssl/certs/ca-certificates.crt; }
find_wrk() { find_binary wrk; }
# The web application's browser tests drive Debian's Chromium (never a downloaded browser).
find_chromium() { find_binary chromium; }
# The web application's build and its test tools come from npm.
find_npm() { find_binary npm; }
# The chart test makes internal keys with the openssl commands the chart's README gives.
find_openssl() { find_binary openssl; }

ensure redis-server redis-server find_redis
ensure redis-cli redis-tools find_redis_cli
ensure wrk wrk find_wrk
ensure curl curl find_curl
ensure ca-certificates ca-certificates find_cacerts
ensure openssl openssl find_openssl
# Only the tests need a browser and npm (`make run` serves the committed bundle).
if [[ "${1:-}" == "--test" ]]; then
	ensure chromium chromium find_chromium
	ensure npm npm find_npm
fi
