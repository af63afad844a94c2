package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: the conventional "nonroot" of distroless images.
const (
	uid      = 65532
	gid      = 65532
	binDir   = "usr/local/bin"
	caPath   = "etc/ssl/certs/ca-certificates.crt"
	source   = "https://github.com/linkmesh/linkmesh"
	passwd   = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"
	groupTxt = "root:x:0:\nnonroot:x:65532:\n"
)

// descriptions are the org.opencontainers.image.description of each image.
var descriptions = map[string]string{
	"gateway":    "linkmesh gateway: the public REST API and the short-link redirects",
	"auth":       "linkmesh auth: accounts, logins, sessions and roles",
	"link":       "linkmesh link: creation, resolution and moderation of short links",
	"analytics":  "linkmesh analytics: the click stream consumer and click statistics",
	"moderation": "linkmesh moderation: reports, permanent-link requests and the audit log",
	"quota":      "linkmesh quota: sliding-window quotas and login limits",
}

// compile builds the service's static binary for platform p into out.
func (o *options) compile(ctx context.Context, svc string, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, o.goCmd, "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w",
		"-o", out, "./services/"+svc+"/cmd/"+svc)
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w", svc, p, err)
	}
	return checkStatic(out)
}

// checkStatic refuses a binary that needs a dynamic loader or shared libraries: the image
// has neither.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (has PT_INTERP)", path)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v", path, libs)
	}
	return nil
}

// fillProvenance sets the version, revision and creation time from git and
// SOURCE_DATE_EPOCH where the flags left them unset.
func (o *options) fillProvenance(ctx context.Context) error {
	gitOut := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = o.root
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if o.revision == "" {
		o.revision = gitOut("rev-parse", "HEAD")
	}
	if o.version == "" {
		if o.version = gitOut("describe", "--tags", "--always"); o.version == "" {
			o.version = "dev"
		}
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		epoch = gitOut("log", "-1", "--format=%ct")
	}
	if epoch == "" {
		epoch = "0"
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", epoch, err)
	}
	o.created = time.Unix(secs, 0).UTC()
	return nil
}

// labels are the org.opencontainers.image.* labels (and manifest annotations) of svc's image.
func (o *options) labels(svc string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "linkmesh-" + svc,
		"org.opencontainers.image.description": descriptions[svc],
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.url":         source,
		"org.opencontainers.image.vendor":      "linkmesh",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
	}
	if o.revision != "" {
		l["org.opencontainers.image.revision"] = o.revision
	}
	return l
}

// entry is one file or folder of a layer, owned by root.
type entry struct {
	name string // without a leading slash; a trailing slash makes a folder
	mode int64
	data []byte
}

// layer makes an OCI layer of entries with every time set to t.
func layer(entries []entry, t time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: t, Uname: "root", Gname: "root", Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// baseLayer holds the user and group files and the CA bundle.
func baseLayer(caFile string, t time.Time) (v1.Layer, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w (install Debian's ca-certificates or pass -ca)", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", caFile)
	}
	return layer([]entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(groupTxt)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: caPath, mode: 0o644, data: ca},
	}, t)
}

// assemble makes svc's image for platform p: the base layer, then the binary.
func assemble(svc string, p v1.Platform, binary string, base v1.Layer, labels map[string]string, t time.Time) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	bin, err := layer([]entry{
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: binDir + "/", mode: 0o755},
		{name: binDir + "/" + svc, mode: 0o755, data: data},
	}, t)
	if err != nil {
		return nil, err
	}
	entrypoint := "/" + binDir + "/" + svc
	cfg := &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: t},
		Config: v1.Config{
			User:       fmt.Sprintf("%d:%d", uid, gid),
			Entrypoint: []string{entrypoint},
			WorkingDir: "/",
			// Inside a container the service listens on every interface; the metrics
			// listener opens where LINKMESH_METRICS_ADDR says.
			Env: []string{
				"PATH=/" + binDir,
				"LINKMESH_LISTEN_ADDR=:8080",
				"LINKMESH_METRICS_ADDR=:9090",
			},
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}},
			Labels:       labels,
			StopSignal:   "SIGTERM",
		},
	}
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), cfg)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: t}, CreatedBy: "imagebuild: /etc/passwd /etc/group /" + caPath, Comment: "users and CA certificates"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: v1.Time{Time: t}, CreatedBy: "imagebuild: " + entrypoint, Comment: "CGO_ENABLED=0 go build -trimpath -ldflags '-s -w'"}},
	)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}
