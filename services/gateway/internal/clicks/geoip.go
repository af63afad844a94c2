package clicks

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/oschwald/maxminddb-golang/v2"
)

// GeoIP reads countries from a MaxMind DB file: MaxMind's own country and city databases
// (country.iso_code) and the ip-location-db country databases (country_code) alike.
//
// Every network of a country database points at one of a few hundred records, so the
// country of each record is decoded once and kept by the record's offset: a lookup is then
// the walk of the tree alone, with nothing decoded or allocated.
type GeoIP struct {
	r         *maxminddb.Reader
	countries sync.Map // record offset (uintptr) → country (string)
	kept      atomic.Int64
}

// maxKeptRecords bounds the records whose country is kept: a country database has a few
// hundred, a city database (also readable) hundreds of thousands, of which only the first
// are kept; the others are decoded on every lookup.
const maxKeptRecords = 4096

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
	res := g.r.Lookup(ip.Unmap())
	if !res.Found() {
		return ""
	}
	if cc, ok := g.countries.Load(res.Offset()); ok {
		return cc.(string)
	}
	var rec geoRecord
	if err := res.Decode(&rec); err != nil {
		return ""
	}
	cc := rec.Country.ISOCode
	if cc == "" {
		cc = rec.CountryCode
	}
	if g.kept.Load() < maxKeptRecords {
		g.kept.Add(1)
		g.countries.Store(res.Offset(), cc)
	}
	return cc
}

// Close releases the database.
func (g *GeoIP) Close() error { return g.r.Close() }
