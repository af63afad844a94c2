// Package images checks the service images deploy/images/build.sh writes into the OCI image
// layout: what each holds (a static binary, the CA bundle, the user files, nothing else), how
// it is configured (non-root 65532:65532, the binary as entrypoint), and that each one starts
// and answers /healthz and /readyz as uid 65532 from the image's own filesystem.
//
// It runs when LINKMESH_IMAGE_LAYOUT names the layout, or under LINKMESH_REQUIRE_INTEGRATION
// (`make test`, after `make images`), where it reads .linkmesh/images/oci and fails when an
// image is missing. Images are found as <LINKMESH_IMAGE_REPO>/<svc>:<LINKMESH_IMAGE_TAG>
// (default linkmesh/<svc>:dev).
//
// Starting an image needs root. LINKMESH_IMAGE_RUNTIME chooses how:
//
//   - podman: `podman run` (rootful, with the runc runtime, host network, explicit
//     nofile/nproc limits: crun refuses these machines' hybrid cgroup hierarchy, and the
//     default limits podman asks for exceed what the machine lets any process set);
//   - chroot: the image's layers are unpacked into a folder and the entrypoint is started
//     chrooted into it as uid/gid 65532, with the image's environment;
//   - unset: podman when it is on PATH, chroot otherwise.
//
// The services need their datastores to start: those of `devstack exec`
// (LINKMESH_TEST_MONGODB_URI, LINKMESH_TEST_REDIS_URL), or the test starts its own.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

const (
	envLayout  = "LINKMESH_IMAGE_LAYOUT"
	envRepo    = "LINKMESH_IMAGE_REPO"
	envTag     = "LINKMESH_IMAGE_TAG"
	envRuntime = "LINKMESH_IMAGE_RUNTIME"
	refName    = "org.opencontainers.image.ref.name"
	nonroot    = 65532
)

var services = []string{"gateway", "auth", "link", "analytics", "moderation", "quota"}

// layoutPath opens the image layout, skipping the test when none is asked for.
func layoutPath(t *testing.T) layout.Path {
	t.Helper()
	dir := os.Getenv(envLayout)
	if dir == "" {
		if os.Getenv(testenv.EnvRequire) == "" {
			t.Skipf("no image layout: set %s (or run `make images test`)", envLayout)
		}
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".linkmesh", "images", "oci")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("image layout %s: %v (build the images first: deploy/images/build.sh or make images)", dir, err)
	}
	return p
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// imageRef is the name svc's image has in the layout.
func imageRef(svc string) string {
	return env(envRepo, "linkmesh") + "/" + svc + ":" + env(envTag, "dev")
}

// image returns svc's image for this machine's architecture.
func image(t *testing.T, p layout.Path, svc string) v1.Image {
	t.Helper()
	ref := imageRef(svc)
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range m.Manifests {
		names = append(names, d.Annotations[refName])
		if d.Annotations[refName] != ref {
			continue
		}
		if d.MediaType.IsImage() {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
		inner, err := idx.ImageIndex(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		im, err := inner.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range im.Manifests {
			if c.Platform != nil && c.Platform.OS == "linux" && c.Platform.Architecture == runtime.GOARCH {
				img, err := inner.Image(c.Digest)
				if err != nil {
					t.Fatal(err)
				}
				return img
			}
		}
		t.Fatalf("%s has no linux/%s image", ref, runtime.GOARCH)
	}
	t.Fatalf("image %s missing from the layout (holds %v); build it with deploy/images/build.sh", ref, names)
	return nil
}

// file is one entry of an image's layers.
type file struct {
	typ  byte
	mode int64
	uid  int
	gid  int
	data []byte
}

// read caches files by image digest: unpacking a layer is slow under -race.
var read sync.Map

// files reads every entry of every layer, in order, failing on one met twice.
func files(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if fs, ok := read.Load(digest); ok {
		return fs.(map[string]file)
	}
	fs := readFiles(t, img)
	read.Store(digest, fs)
	return fs
}

func readFiles(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]file{}
	for i, l := range layers {
		mt, err := l.MediaType()
		if err != nil {
			t.Fatal(err)
		}
		if mt != types.OCILayer {
			t.Errorf("layer %d: media type %s, want %s", i, mt, types.OCILayer)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
			if h.Typeflag == tar.TypeDir {
				name += "/"
			}
			if _, dup := out[name]; dup {
				t.Errorf("%s is in more than one layer", name)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = file{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, data: data}
		}
		rc.Close()
	}
	return out
}

// TestImages checks each image's configuration and contents.
func TestImages(t *testing.T) {
	p := layoutPath(t)
	for _, svc := range services {
		t.Run(svc, func(t *testing.T) {
			img := image(t, p, svc)
			checkConfig(t, img, svc)
			checkFiles(t, img, svc)
		})
	}
}

func checkConfig(t *testing.T, img v1.Image, svc string) {
	t.Helper()
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s (%v), want %s", mt, err, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	// A numeric user, so that Kubernetes' runAsNonRoot can verify it without /etc/passwd.
	u, g, ok := strings.Cut(c.User, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid != nonroot || gid != nonroot {
		t.Errorf("user %q, want the numeric %d:%d", c.User, nonroot, nonroot)
	}
	if want := []string{"/usr/local/bin/" + svc}; !slices.Equal(c.Entrypoint, want) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want %q and no cmd", c.Entrypoint, c.Cmd, want)
	}
	if c.WorkingDir != "/" {
		t.Errorf("working dir %q, want /", c.WorkingDir)
	}
	if ports := slices.Sorted(maps.Keys(c.ExposedPorts)); !slices.Equal(ports, []string{"8080/tcp", "9090/tcp"}) {
		t.Errorf("exposed ports %v, want 8080/tcp and 9090/tcp", ports)
	}
	if cf.OS != "linux" || cf.Architecture == "" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	for _, l := range []string{"title", "description", "source", "version", "revision", "created"} {
		if c.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("no label org.opencontainers.image.%s (labels %v)", l, c.Labels)
		}
	}
	if c.Labels["org.opencontainers.image.title"] != "linkmesh-"+svc {
		t.Errorf("title %q", c.Labels["org.opencontainers.image.title"])
	}
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e), "SECRET") {
			t.Errorf("the image's environment holds a secret: %s", e)
		}
	}
}

// expected are the entries every image holds, besides its binary: nothing else, so no shell.
var expected = map[string]byte{
	"etc/":                              tar.TypeDir,
	"etc/passwd":                        tar.TypeReg,
	"etc/group":                         tar.TypeReg,
	"etc/ssl/":                          tar.TypeDir,
	"etc/ssl/certs/":                    tar.TypeDir,
	"etc/ssl/certs/ca-certificates.crt": tar.TypeReg,
	"usr/":                              tar.TypeDir,
	"usr/local/":                        tar.TypeDir,
	"usr/local/bin/":                    tar.TypeDir,
}

func checkFiles(t *testing.T, img v1.Image, svc string) {
	t.Helper()
	fs := files(t, img)
	want := maps.Clone(expected)
	bin := "usr/local/bin/" + svc
	want[bin] = tar.TypeReg
	got := slices.Sorted(maps.Keys(fs))
	if !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Errorf("the layers hold %v, want exactly %v", got, slices.Sorted(maps.Keys(want)))
	}
	for name, f := range fs {
		if want[name] != f.typ {
			t.Errorf("%s: type %q, want %q", name, f.typ, want[name])
		}
		if f.uid != 0 || f.gid != 0 {
			t.Errorf("%s: owner %d:%d, want root (the service cannot change its own files)", name, f.uid, f.gid)
		}
		if f.mode&0o022 != 0 {
			t.Errorf("%s: mode %o is group- or world-writable", name, f.mode)
		}
	}
	if !strings.Contains(string(fs["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot 65532:65532:\n%s", fs["etc/passwd"].data)
	}
	if !strings.Contains(string(fs["etc/group"].data), "nonroot:x:65532:") {
		t.Errorf("/etc/group has no nonroot 65532:\n%s", fs["etc/group"].data)
	}
	checkCABundle(t, fs["etc/ssl/certs/ca-certificates.crt"].data)
	if fs[bin].mode&0o111 == 0 {
		t.Errorf("%s is not executable (mode %o)", bin, fs[bin].mode)
	}
	checkStatic(t, fs[bin].data)
}

// checkCABundle wants a PEM bundle of real CA certificates, as Debian's ca-certificates has.
func checkCABundle(t *testing.T, pemData []byte) {
	t.Helper()
	n := 0
	for rest := pemData; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Errorf("CA bundle certificate %d: %v", n+1, err)
			continue
		}
		if !c.IsCA {
			t.Errorf("CA bundle certificate %q is no CA", c.Subject)
		}
		n++
	}
	if n < 50 {
		t.Errorf("CA bundle holds %d certificates, want the full set (Debian: over 100)", n)
	}
}

// checkStatic wants an ELF executable for this image's platform that needs no loader and no
// shared library, stripped of symbols and DWARF.
func checkStatic(t *testing.T, data []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("binary: %v", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		t.Errorf("ELF type %s, want ET_EXEC (a static, non-PIE executable)", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has PT_INTERP: it needs a dynamic loader")
		}
		if p.Type == elf.PT_DYNAMIC {
			t.Error("the binary has a PT_DYNAMIC segment")
		}
	}
	if needed, err := f.DynString(elf.DT_NEEDED); err == nil && len(needed) > 0 {
		t.Errorf("the binary needs shared libraries %v", needed)
	}
	if f.Section(".interp") != nil || f.Section(".dynamic") != nil {
		t.Error("the binary has .interp or .dynamic sections")
	}
	if f.Section(".symtab") != nil || f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil {
		t.Error("the binary keeps its symbol table or DWARF (-ldflags \"-s -w\")")
	}
	if f.Section(".go.buildinfo") == nil {
		t.Error("the binary is no Go binary")
	}
}

// TestImagesStart starts each image, as uid 65532 from the image's own files, against real
// datastores, and wants /healthz and /readyz to answer 200 and SIGTERM to stop it cleanly.
func TestImagesStart(t *testing.T) {
	p := layoutPath(t)
	require := os.Getenv(testenv.EnvRequire) != ""
	if os.Geteuid() != 0 {
		if require {
			t.Fatal("starting the images needs root (a container runtime, or chroot and uid 65532)")
		}
		t.Skip("starting the images needs root")
	}
	how := os.Getenv(envRuntime)
	if how == "" {
		how = "chroot"
		if _, err := exec.LookPath("podman"); err == nil {
			how = "podman"
		}
	}
	if how != "podman" && how != "chroot" {
		t.Fatalf("%s=%q: want podman or chroot", envRuntime, how)
	}
	mongoURI, redisURL := datastores(t)
	prefix := testenv.Name("images")
	// A Redis database of our own: the analytics service joins the clicks stream's consumer
	// group, which must not take the entries of tests running beside this one.
	redisURL = stack.OwnRedisDB(t, redisURL, redisDB)
	t.Cleanup(func() { stack.DropDatabases(t, mongoURI, prefix) })
	internal, err := stack.GenerateInternalKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range services {
		t.Run(svc, func(t *testing.T) {
			img := image(t, p, svc)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			ports := freePorts(t, 2)
			port, metricsPort := ports[0], ports[1]
			vars := map[string]string{
				"LINKMESH_LISTEN_ADDR":      "127.0.0.1:" + port,
				"LINKMESH_METRICS_ADDR":     "127.0.0.1:" + metricsPort,
				"LINKMESH_INTERNAL_KEY":     internal.Keys[svc],
				"LINKMESH_INTERNAL_CERTS":   internal.Certs,
				"LINKMESH_MONGODB_URI":      mongoURI,
				"LINKMESH_MONGODB_DATABASE": prefix + "_" + svc,
				"LINKMESH_REDIS_URL":        redisURL,
				"OTEL_TRACES_EXPORTER":      "none",
			}
			switch svc {
			case "gateway":
				vars["LINKMESH_IDENTITY_SECRET"] = secret(t)
			case "link":
				vars["LINKMESH_WEBHOOK_KEY"] = secret(t)
			}
			// The image migrates its database as the chart's migration Job runs it, then serves
			// (the gateway, which has none, says so and exits).
			var mig *started
			if how == "podman" {
				mig = startPodman(t, img, svc+"-migrate", vars, "migrate")
			} else {
				mig = startChroot(t, img, cf, vars, "migrate")
			}
			for deadline := time.Now().Add(60 * time.Second); !mig.exited(); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s migrate still running after 60 s\n%s", svc, mig.output())
				}
			}
			if code := mig.stop(); code != 0 {
				t.Fatalf("%s migrate exited %d\n%s", svc, code, mig.output())
			}
			var proc *started
			if how == "podman" {
				proc = startPodman(t, img, svc, vars)
			} else {
				proc = startChroot(t, img, cf, vars)
			}
			base := "http://127.0.0.1:" + port
			if err := waitFor(base+"/healthz", proc.exited, 30*time.Second); err != nil {
				t.Fatalf("%s: %v\n%s", svc, err, proc.output())
			}
			if err := waitFor(base+"/readyz", proc.exited, 30*time.Second); err != nil {
				t.Errorf("%s: %v\n%s", svc, err, proc.output())
			}
			checkProcess(t, proc.pid(), proc.root, files(t, img))
			t.Logf("%s (%s): /healthz and /readyz 200 from pid %d as uid/gid %d", svc, how, proc.pid(), nonroot)
			if code := proc.stop(); code != 0 {
				t.Errorf("%s exited %d after SIGTERM, want 0\n%s", svc, code, proc.output())
			}
		})
	}
}

// datastores are devstack's, or our own started for this test.
func datastores(t *testing.T) (mongoURI, redisURL string) {
	t.Helper()
	if m, r, ok := stack.FromEnv(); ok {
		return m, r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ds, err := stack.StartDatastores(ctx, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("start datastores: %v", err)
	}
	t.Cleanup(ds.Stop)
	return ds.MongoURI, ds.RedisURL
}

// redisDB is the Redis database the started services use.
const redisDB = 13

// started is a service started from its image.
type started struct {
	pid    func() int
	root   string // the folder the process is chrooted into; "" under podman
	exited func() bool
	stop   func() int // SIGTERM, wait, exit code
	output func() string
}

// startChroot unpacks img into a folder and starts its entrypoint chrooted there as
// uid/gid 65532, with the image's environment plus vars.
func startChroot(t *testing.T, img v1.Image, cf *v1.ConfigFile, vars map[string]string, args ...string) *started {
	t.Helper()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if err := unpack(img, rootfs); err != nil {
		t.Fatalf("unpack: %v", err)
	}
	var out syncBuffer
	cmd := &exec.Cmd{
		Path:   cf.Config.Entrypoint[0], // inside the chroot
		Args:   append(append(slices.Clone(cf.Config.Entrypoint), cf.Config.Cmd...), args...),
		Env:    mergeEnv(cf.Config.Env, vars),
		Dir:    cf.Config.WorkingDir,
		Stdout: &out,
		Stderr: &out,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     rootfs,
			Credential: &syscall.Credential{Uid: nonroot, Gid: nonroot, Groups: []uint32{}},
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s in %s: %v", cmd.Path, rootfs, err)
	}
	done := make(chan struct{})
	var state *os.ProcessState
	go func() {
		_ = cmd.Wait()
		state = cmd.ProcessState
		close(done)
	}()
	exited := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	stop := func() int {
		if !exited() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		return state.ExitCode()
	}
	t.Cleanup(func() { stop() })
	return &started{pid: func() int { return cmd.Process.Pid }, root: rootfs, exited: exited, stop: stop, output: out.String}
}

// unpack writes the image's filesystem (its layers flattened) into dir, with owners and modes.
func unpack(img v1.Image, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: entry type %q not expected in these images", name, h.Typeflag)
		}
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return err
		}
		if err := os.Chmod(target, os.FileMode(h.Mode).Perm()); err != nil {
			return err
		}
	}
}

// startPodman loads img into podman's storage from the layout and runs it: rootful, runc,
// host network (the service listens on 127.0.0.1 only), the image's own user.
func startPodman(t *testing.T, img v1.Image, svc string, vars map[string]string, extra ...string) *started {
	t.Helper()
	podman := func(args ...string) (string, error) {
		out, err := exec.Command("podman", args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	// Load the image from the layout through a single-image layout of its own, so that
	// podman reads exactly this image.
	// podman names the image after the folder, which must be lower case.
	tmp, err := os.MkdirTemp("", "linkmesh-image-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	one := filepath.Join(tmp, "oci")
	lp, err := layout.Write(one, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	id, err := podman("pull", "-q", "oci:"+one)
	if err != nil {
		t.Fatalf("podman pull: %v\n%s", err, id)
	}
	id = lastLine(id)
	t.Cleanup(func() { _, _ = podman("rmi", "-f", id) })
	// Secrets go in a file, out of the process list; an env file holds one line per variable,
	// so the multi-line ones (the PEM key and certificates) go as arguments.
	envFile := filepath.Join(t.TempDir(), "env")
	var lines, multiline []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if strings.Contains(vars[k], "\n") {
			multiline = append(multiline, "--env", k+"="+vars[k])
			continue
		}
		lines = append(lines, k+"="+vars[k])
	}
	if err := os.WriteFile(envFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "linkmesh-image-test-" + svc + "-" + strconv.Itoa(os.Getpid())
	_, _ = podman("rm", "-f", name)
	args := []string{"run", "-d", "--name", name, "--runtime", "runc", "--network", "host",
		"--ulimit", "nofile=" + nofile() + ":" + nofile(), "--ulimit", "nproc=4096:4096",
		"--env-file", envFile}
	args = append(append(append(args, multiline...), id), extra...)
	if out, err := podman(args...); err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() { _, _ = podman("rm", "-f", "-t", "0", name) })
	inspect := func(format string) string {
		out, _ := podman("inspect", "--format", format, name)
		return out
	}
	pid, _ := strconv.Atoi(inspect("{{.State.Pid}}"))
	logs := func() string { out, _ := podman("logs", name); return out }
	return &started{
		pid:    func() int { return pid },
		exited: func() bool { return inspect("{{.State.Running}}") != "true" },
		stop: func() int {
			if out, err := podman("stop", "-t", "15", name); err != nil {
				t.Errorf("podman stop: %v\n%s", err, out)
			}
			code, _ := strconv.Atoi(inspect("{{.State.ExitCode}}"))
			return code
		},
		output: logs,
	}
}

// checkProcess wants pid to run as uid and gid 65532 (real, effective, saved, filesystem)
// with no supplementary group, the image's binary from the image's filesystem: the file it
// executes is the image's binary, its root holds the image's files and no shell. Under chroot
// its root must be the unpacked folder.
func checkProcess(t *testing.T, pid int, chroot string, image map[string]file) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d\t%d\t%d\t%d", nonroot, nonroot, nonroot, nonroot)
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Uid", "Gid":
			if v != want {
				t.Errorf("process %d %s: %q, want %q", pid, k, v, want)
			}
		case "Groups":
			if v != "" && v != strconv.Itoa(nonroot) {
				t.Errorf("process %d has supplementary groups %q", pid, v)
			}
		}
	}
	proc := fmt.Sprintf("/proc/%d", pid)
	exe, err := os.ReadFile(proc + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	var bin string
	for name := range image {
		if strings.HasPrefix(name, "usr/local/bin/") && !strings.HasSuffix(name, "/") {
			bin = name
		}
	}
	if !bytes.Equal(exe, image[bin].data) {
		t.Errorf("process %d does not run the image's /%s", pid, bin)
	}
	for name, f := range image {
		if f.typ != tar.TypeReg {
			continue
		}
		got, err := os.ReadFile(filepath.Join(proc, "root", name))
		if err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("process %d sees a different /%s (%v)", pid, name, err)
		}
	}
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if _, err := os.Lstat(filepath.Join(proc, "root", sh)); err == nil {
			t.Errorf("process %d's filesystem has /%s", pid, sh)
		}
	}
	if chroot != "" {
		if got, err := os.Readlink(proc + "/root"); err != nil || filepath.Clean(got) != filepath.Clean(chroot) {
			t.Errorf("process %d root %q (%v), want the unpacked image %q", pid, got, err, chroot)
		}
	}
}

// waitFor polls url until it answers 200, the process exits, or the time is up.
func waitFor(url string, exited func() bool, d time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		if exited() {
			return fmt.Errorf("exited before %s answered (last: %v)", url, last)
		}
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within %s: %v", url, d, last)
}

func mergeEnv(base []string, vars map[string]string) []string {
	out := []string{}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// freePorts returns n loopback ports that were free a moment ago, all different: each stays
// held until all are picked (two ports picked one after the other can be the same one, which
// once made a service's metrics listener collide with its API's).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return ports
}

func secret(t *testing.T) string {
	t.Helper()
	s, err := stack.RandomSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// nofile is this process's open-files limit, which podman may hand on (it may not raise it).
func nofile() string {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Max > 1<<20 {
		return "1024"
	}
	return strconv.FormatUint(r.Max, 10)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// syncBuffer collects a process's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
