package stack

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// buildFakeServices builds testdata/fakeservice once under all six service names.
func buildFakeServices(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	binDir := t.TempDir()
	first := filepath.Join(binDir, "fake")
	out, err := exec.Command("go", "build", "-o", first, "./testdata/fakeservice").CombinedOutput()
	if err != nil {
		t.Fatalf("build fake service: %v\n%s", err, out)
	}
	for _, svc := range ServiceNames() {
		if err := os.Link(first, filepath.Join(binDir, svc)); err != nil {
			t.Fatal(err)
		}
	}
	return binDir
}

func TestStartServices(t *testing.T) {
	binDir := buildFakeServices(t)
	logDir := t.TempDir()
	s, err := StartServices(t.Context(), ServicesOptions{
		BinDir:     binDir,
		MongoURI:   "mongodb://127.0.0.1:1/",
		RedisURL:   "redis://127.0.0.1:2/0",
		Env:        map[string]string{"EXTRA": "all"},
		ServiceEnv: map[string]map[string]string{"link": {"EXTRA": "link-only"}},
		LogDir:     logDir,
	})
	if err != nil {
		t.Fatalf("StartServices: %v", err)
	}
	t.Cleanup(s.Stop)
	if len(s.URLs) != 6 || s.GatewayURL != s.URLs["gateway"] {
		t.Fatalf("URLs = %v, gateway %q", s.URLs, s.GatewayURL)
	}

	var env []string
	resp, err := http.Get(s.URLs["link"] + "/env")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"LINKMESH_LISTEN_ADDR=" + strings.TrimPrefix(s.URLs["link"], "http://"),
		"LINKMESH_MONGODB_DATABASE=linkmesh_link",
		"LINKMESH_QUOTA_URL=" + s.URLs["quota"],
		"LINKMESH_BASE_URL=" + s.GatewayURL,
		"EXTRA=link-only",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("link env lacks %s", want)
		}
	}
	if _, err := os.Stat(filepath.Join(logDir, "gateway.log")); err != nil {
		t.Errorf("gateway log: %v", err)
	}

	s.Stop()
	s.Stop()
	for svc, u := range s.URLs {
		pu, _ := url.Parse(u)
		if conn, err := net.Dial("tcp", pu.Host); err == nil {
			conn.Close()
			t.Errorf("%s still listening after Stop", svc)
		}
	}
}

func TestStartServicesFailureShowsLogAndStopsOthers(t *testing.T) {
	binDir := buildFakeServices(t)
	logDir := t.TempDir()
	_, err := StartServices(t.Context(), ServicesOptions{
		BinDir:     binDir,
		ServiceEnv: map[string]map[string]string{"auth": {"FAKE_FAIL": "auth exploded on purpose"}},
		LogDir:     logDir,
	})
	if err == nil {
		t.Fatal("StartServices succeeded with a failing auth service")
	}
	if !strings.Contains(err.Error(), "auth exploded on purpose") {
		t.Errorf("error lacks the service's log tail: %v", err)
	}
	t.Logf("error: %v", err)
	// quota and link started before auth and must have been stopped.
	for _, svc := range []string{"quota", "link"} {
		b, _ := os.ReadFile(filepath.Join(logDir, svc+".log"))
		if !strings.Contains(string(b), `"stopped"`) {
			t.Errorf("%s was not stopped after auth failed; log:\n%s", svc, b)
		}
	}
	if _, err := os.Stat(filepath.Join(logDir, "gateway.log")); err == nil {
		t.Error("gateway was started although auth failed")
	}
}

func TestCheckBinariesNamesMissing(t *testing.T) {
	err := CheckBinaries(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "gateway") || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("CheckBinaries(empty) = %v", err)
	}
}

// A port another process binds between its pick and the service's start makes the set start
// again on new ports.
func TestStartServicesRetriesATakenPort(t *testing.T) {
	binDir := buildFakeServices(t)
	var held net.Listener
	var taken, calls int
	pickPort = func() (int, error) {
		calls++
		port, err := freePort()
		switch calls {
		case 3:
			taken = port
		case 4: // after the third service's port was found free, someone binds it
			if held, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(taken))); err != nil {
				return 0, err
			}
		}
		return port, err
	}
	t.Cleanup(func() {
		pickPort = freePort
		if held != nil {
			held.Close()
		}
	})
	s, err := StartServices(t.Context(), ServicesOptions{BinDir: binDir, MongoURI: "mongodb://127.0.0.1:1/",
		RedisURL: "redis://127.0.0.1:2/0", LogDir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartServices: %v", err)
	}
	t.Cleanup(s.Stop)
	if held == nil || calls < 12 {
		t.Fatalf("%d ports picked; the services were not started again", calls)
	}
	for svc, u := range s.URLs {
		if strings.HasSuffix(u, ":"+strconv.Itoa(taken)) {
			t.Fatalf("%s listens on the taken port", svc)
		}
	}
}
