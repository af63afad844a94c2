#!/usr/bin/env bash
# fetch-geoip.sh DIR puts a country database in MaxMind DB format at DIR/countries.mmdb,
# for `make run` (LINKMESH_GEOIP_DB). It is ip-location-db's geo-whois-asn-country
# database (data CC BY 4.0 by the NRO, see DIR/NRO_LICENSE), fetched from the npm registry
# as the package's tarball at a pinned version and checked against its SHA-256; nothing
# from the package is run. It does nothing when the file is already there.
set -euo pipefail

dir="${1:?usage: fetch-geoip.sh DIR}"
version="2.3.2026061719"
sha256="91757a1b06cdcd1955f292e4c4cfc54e091204f998e159a3187f7a2ef3724be0"
url="https://registry.npmjs.org/@ip-location-db/geo-whois-asn-country-mmdb/-/geo-whois-asn-country-mmdb-${version}.tgz"

if [[ -s "$dir/countries.mmdb" ]]; then
	echo "found     GeoIP database: $dir/countries.mmdb"
	exit 0
fi
mkdir -p "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# curl comes with deploy/local/install-deps.sh (make deps).
curl -sSfL --retry 3 -o "$tmp/db.tgz" "$url"
echo "$sha256  $tmp/db.tgz" | sha256sum -c --quiet -
tar -xzf "$tmp/db.tgz" -C "$tmp" package/geo-whois-asn-country.mmdb package/NRO_LICENSE
mv "$tmp/package/NRO_LICENSE" "$dir/NRO_LICENSE"
mv "$tmp/package/geo-whois-asn-country.mmdb" "$dir/countries.mmdb"
echo "fetched   GeoIP database: $dir/countries.mmdb (ip-location-db $version)"
