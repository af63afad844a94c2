package clicks

import (
	"fmt"
	"net/netip"

	"github.com/oschwald/maxminddb-golang/v2"
)

// GeoIP reads countries from a MaxMind DB file: MaxMind's own country and city databases
// (country.iso_code) and the ip-location-db country databases (country_code) alike.
type GeoIP struct{ r *maxminddb.Reader }

// OpenGeoIP opens the database at path.
func OpenGeoIP(path string) (*GeoIP, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open GeoIP database %s: %w", path, err)
	}
	return &GeoIP{r: r}, nil
}

// geoRecord holds the country fields of both layouts.
type geoRecord struct {
	CountryCode string `maxminddb:"country_code"`
	Country     struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
}

// Country is ip's ISO country code, or "" when the database does not know the address.
func (g *GeoIP) Country(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	var rec geoRecord
	if err := g.r.Lookup(ip.Unmap()).Decode(&rec); err != nil {
		return ""
	}
	if rec.Country.ISOCode != "" {
		return rec.Country.ISOCode
	}
	return rec.CountryCode
}

// Close releases the database.
func (g *GeoIP) Close() error { return g.r.Close() }
