package testenv

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// GeoIPLayout picks how a test country database stores the code: MaxMind's own layout
// (country.iso_code) or ip-location-db's (country_code).
type GeoIPLayout int

const (
	GeoIPMaxMind GeoIPLayout = iota
	GeoIPLocationDB
)

// WriteGeoIP writes a MaxMind DB country database mapping each CIDR to its ISO code into
// the test's temporary directory and returns its path.
func WriteGeoIP(t testing.TB, layout GeoIPLayout, countries map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countries.mmdb")
	if err := BuildGeoIP(path, layout, countries); err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildGeoIP writes the database of WriteGeoIP to path.
func BuildGeoIP(path string, layout GeoIPLayout, countries map[string]string) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "linkmesh-test-country", RecordSize: 24, IncludeReservedNetworks: true})
	if err != nil {
		return err
	}
	for cidr, cc := range countries {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			return err
		}
		var rec mmdbtype.Map
		if layout == GeoIPLocationDB {
			rec = mmdbtype.Map{"country_code": mmdbtype.String(cc)}
		} else {
			rec = mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(cc)}}
		}
		if err := tree.Insert(network, rec); err != nil {
			return err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := tree.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
