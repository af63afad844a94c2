#!/usr/bin/env bash
# install-store.sh builds and installs the embedded MongoDB wire-protocol store's PostgreSQL
# side: PostgreSQL 15 with the DocumentDB extension (FerretDB's fork), which FerretDB v2 (built
# into devstack from its Go module) serves the MongoDB wire protocol over.
#
#   install-store.sh BUILD_DIR [MIRROR_DIR]
#
# Debian's packages give PostgreSQL 15, pg_cron, PostGIS, RUM and the build tools. DocumentDB,
# pgvector and libbson are built from pinned sources: read from MIRROR_DIR when it is given and
# exists (archives made by `git archive` of the pinned commit, each checked against its
# SHA-256 below), otherwise fetched from upstream at the exact commit (the checkout is checked
# to be that commit). The build happens once: a stamp naming the pins is written next to the
# installed extension, and a later run that finds it does nothing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

build_dir=${1:?usage: install-store.sh BUILD_DIR [MIRROR_DIR]}
mirror=${2:-}

PG_MAJOR=15
PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config

# name|upstream repository|commit|archive in the mirror|SHA-256 of that archive
PINS=(
	"documentdb|https://github.com/FerretDB/documentdb|5b104c9555dde1fc39f20f4da7a4509d5ccea640|documentdb-5b104c95.tar.gz|87258d37a5727611de9f052c69f259a96c170df0dfc5a3ca0d6e04602debd005"
	"libbson|https://github.com/mongodb/mongo-c-driver|a463a46c38cb6b552f2da4b3ae63e393dfe0a9a6|mongo-c-driver-1.28.0.tar.gz|5399ff4c915b03fbd9e0cd4c79fb662530812a1180b55b0d9c7fc3cb0c99bd79"
	"pgvector|https://github.com/pgvector/pgvector|2627c5ff775ae6d7aef0c430121ccf857842d2f2|pgvector-0.8.0.tar.gz|f735d37c1f8a32a0c46f29db63860bdc1ed06a423d4280767afbd38f1fe58778"
)
# The store's Debian packages: the server and its extensions, and what the C build needs.
# libkrb5-dev: PostgreSQL's libpq-be.h includes gssapi/gssapi.h. libintelrdfpmath-dev: the
# Intel decimal library DocumentDB links (as pkg-config "intelmathlib", written below).
PACKAGES=(
	build-essential pkg-config cmake git ca-certificates
	postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR postgresql-$PG_MAJOR-cron
	postgresql-$PG_MAJOR-postgis-3 postgresql-$PG_MAJOR-rum
	libpcre2-dev libintelrdfpmath-dev libicu-dev libssl-dev zlib1g-dev libkrb5-dev
)

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { echo "install-store: run as root (or install sudo)" >&2; exit 1; }
	SUDO="sudo"
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "install-store: installing ${missing[*]}"
	$SUDO apt-get update -q >/dev/null
	$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp_text=$(printf '%s\n' "${PINS[@]}" | cut -d'|' -f1,3)
stamp="$("$PG_CONFIG" --pkglibdir)/linkmesh-store.stamp"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$stamp_text" && -f "$("$PG_CONFIG" --sharedir)/extension/documentdb.control" ]]; then
	echo "found     store: DocumentDB $(cut -d'|' -f3 <<<"${PINS[0]}" | cut -c1-8) on PostgreSQL $PG_MAJOR"
	exit 0
fi

start=$SECONDS
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
src="$build_dir/src"
rm -rf "$src" "$build_dir/prefix"
mkdir -p "$src"

# source NAME puts the pinned source of NAME into $src/NAME.
source_of() {
	local name=$1 line repo commit archive sum
	line=$(printf '%s\n' "${PINS[@]}" | grep "^$name|")
	IFS='|' read -r _ repo commit archive sum <<<"$line"
	mkdir -p "$src/$name"
	if [[ -n "$mirror" && -d "$mirror" ]]; then
		local got
		got=$(sha256sum "$mirror/$archive" | cut -d' ' -f1)
		if [[ "$got" != "$sum" ]]; then
			echo "install-store: $mirror/$archive has SHA-256 $got, want $sum" >&2
			exit 1
		fi
		tar -xzf "$mirror/$archive" -C "$src/$name" --strip-components=1
	else
		git -C "$src/$name" init -q
		git -C "$src/$name" fetch -q --depth 1 "$repo" "$commit"
		git -C "$src/$name" checkout -q FETCH_HEAD
		if [[ "$(git -C "$src/$name" rev-parse HEAD)" != "$commit" ]]; then
			echo "install-store: $repo fetched as $(git -C "$src/$name" rev-parse HEAD), want $commit" >&2
			exit 1
		fi
	fi
}

for p in "${PINS[@]}"; do source_of "${p%%|*}"; done
jobs=$(nproc)
log="$build_dir/build.log"
: >"$log"
run() { "$@" >>"$log" 2>&1 || { echo "install-store: failed: $* (see $log)" >&2; tail -n 30 "$log" >&2; exit 1; }; }

# libbson 1.28 alone, static and position-independent, into a private prefix (Debian's 1.23
# lacks BSON_SUBTYPE_SENSITIVE, which DocumentDB uses).
echo "install-store: building libbson"
run cmake -S "$src/libbson" -B "$build_dir/libbson-build" -DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_INSTALL_PREFIX="$build_dir/prefix" -DENABLE_MONGOC=OFF -DENABLE_BSON=ON \
	-DENABLE_STATIC=ON -DENABLE_SHARED=OFF -DENABLE_PIC=ON -DENABLE_TESTS=OFF \
	-DENABLE_EXAMPLES=OFF -DENABLE_ICU=OFF -DBUILD_VERSION=1.28.0
run cmake --build "$build_dir/libbson-build" -j "$jobs" --target install

# DocumentDB finds the Intel decimal library as pkg-config "intelmathlib"; Debian ships the
# archive (libbidgcc000.a, the variant DocumentDB's own script builds) without a .pc file.
pcdir="$build_dir/prefix/lib/pkgconfig"
mkdir -p "$pcdir"
bid=$(dpkg -L libintelrdfpmath-dev | grep '/libbidgcc000\.a$' | head -n 1)
inc=$(dirname "$(dpkg -L libintelrdfpmath-dev | grep '/bid_conf\.h$' | head -n 1)")
cat >"$pcdir/intelmathlib.pc" <<EOF
Name: intelmathlib
Description: Intel decimal floating-point math library (Debian's libintelrdfpmath-dev)
Version: 2.0.0
Cflags: -I$inc
Libs: $bid
EOF
export PKG_CONFIG_PATH="$pcdir:$build_dir/prefix/lib64/pkgconfig:${PKG_CONFIG_PATH:-}"

echo "install-store: building pgvector"
run make -C "$src/pgvector" -j "$jobs" PG_CONFIG="$PG_CONFIG" OPTFLAGS=""
run $SUDO make -C "$src/pgvector" install PG_CONFIG="$PG_CONFIG" OPTFLAGS=""

# with_llvm=no skips the bitcode pass (half the build time; the same shared object).
for ext in pg_documentdb_core pg_documentdb; do
	echo "install-store: building $ext"
	run make -C "$src/documentdb/$ext" -j "$jobs" PG_CONFIG="$PG_CONFIG" with_llvm=no
	run $SUDO env PKG_CONFIG_PATH="$PKG_CONFIG_PATH" make -C "$src/documentdb/$ext" install PG_CONFIG="$PG_CONFIG" with_llvm=no
done

printf '%s\n' "$stamp_text" | $SUDO tee "$stamp" >/dev/null
echo "installed store: DocumentDB on PostgreSQL $PG_MAJOR ($((SECONDS - start)) s)"
