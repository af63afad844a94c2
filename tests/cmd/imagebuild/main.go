// Command imagebuild builds linkmesh's service images without a container engine.
//
//	imagebuild [-root DIR] [-layout DIR] [-tar DIR] [-platform linux/amd64[,linux/arm64]]
//	           [-repo linkmesh] [-tag dev] [-image REF] [-push] [service...]
//
// For each service (all six when none is named) it compiles ./services/<svc>/cmd/<svc> as a
// static binary (CGO_ENABLED=0, -trimpath, -ldflags "-s -w") and assembles an OCI image of
// two layers on an empty base:
//
//	layer 1: /etc/passwd, /etc/group (root and nonroot, uid/gid 65532) and
//	         /etc/ssl/certs/ca-certificates.crt, copied from the build machine (Debian's
//	         ca-certificates package; -ca names another bundle)
//	layer 2: /usr/local/bin/<svc>
//
// with the config user 65532:65532, the binary as entrypoint, working directory /, ports
// 8080 (service) and 9090 (metrics) and the org.opencontainers.image.* labels. No shell,
// no package manager, nothing else. File times are the commit time (or SOURCE_DATE_EPOCH),
// so an unchanged tree gives the same image digest.
//
// Each image goes into the OCI image layout -layout (default .linkmesh/images/oci), named
// by the org.opencontainers.image.ref.name annotation <repo>/<svc>:<tag> (or -image);
// a name already there is replaced and blobs no longer referenced are removed. -tar also
// writes <svc>.tar, loadable with `podman load` or `docker load`. -push writes the image
// to its registry with go-containerregistry's remote.Write, with the credentials podman or
// docker stored (REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json,
// ~/.docker/config.json). Several platforms make an image index instead of an image (not
// with -tar).
//
// deploy/images/build.sh drives it for `make images` and for skaffold's custom builder.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// services are the six linkmesh services, each built from ./services/<svc>/cmd/<svc>.
var services = []string{"gateway", "auth", "link", "analytics", "moderation", "quota"}

type options struct {
	root      string
	layoutDir string
	tarDir    string
	platforms []v1.Platform
	repo      string
	tag       string
	image     string
	push      bool
	caFile    string
	goCmd     string
	version   string
	revision  string
	created   time.Time
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "imagebuild: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	var o options
	var platforms string
	fs.StringVar(&o.root, "root", "", "repository root (default: the folder holding go.work above the working directory)")
	fs.StringVar(&o.layoutDir, "layout", "", "OCI image layout to write (default <root>/.linkmesh/images/oci)")
	fs.StringVar(&o.tarDir, "tar", "", "also write <svc>.tar (docker-archive format) into this folder")
	fs.StringVar(&platforms, "platform", "linux/amd64", "comma-separated target platforms, e.g. linux/amd64,linux/arm64")
	fs.StringVar(&o.repo, "repo", "linkmesh", "image name prefix: images are <repo>/<svc>:<tag>")
	fs.StringVar(&o.tag, "tag", "dev", "image tag")
	fs.StringVar(&o.image, "image", "", "full image reference for the one service built (overrides -repo and -tag; skaffold's $IMAGE)")
	fs.BoolVar(&o.push, "push", false, "also push the image to its registry (remote.Write)")
	fs.StringVar(&o.caFile, "ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to ship as /etc/ssl/certs/ca-certificates.crt")
	fs.StringVar(&o.goCmd, "go", "go", "go command")
	fs.StringVar(&o.version, "version", "", "org.opencontainers.image.version (default: git describe)")
	fs.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (default: the HEAD commit)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: imagebuild [flags] [service...]\n\nservices: %s (default: all)\n\n", strings.Join(services, " "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	svcs := fs.Args()
	if len(svcs) == 0 {
		svcs = services
	}
	for _, s := range svcs {
		if !slices.Contains(services, s) {
			return fmt.Errorf("unknown service %q (one of %s)", s, strings.Join(services, ", "))
		}
	}
	if o.image != "" && len(svcs) != 1 {
		return errors.New("-image names one image: give exactly one service")
	}
	var err error
	if o.platforms, err = parsePlatforms(platforms); err != nil {
		return err
	}
	if o.tarDir != "" && len(o.platforms) > 1 {
		return errors.New("-tar holds one platform's image: give one -platform")
	}
	if o.root == "" {
		if o.root, err = findRoot(); err != nil {
			return err
		}
	}
	if o.root, err = filepath.Abs(o.root); err != nil {
		return err
	}
	if o.layoutDir == "" {
		o.layoutDir = filepath.Join(o.root, ".linkmesh", "images", "oci")
	}
	if o.layoutDir, err = filepath.Abs(o.layoutDir); err != nil {
		return err
	}
	if err := o.fillProvenance(ctx); err != nil {
		return err
	}
	for _, svc := range svcs {
		if err := o.buildOne(ctx, svc); err != nil {
			return fmt.Errorf("%s: %w", svc, err)
		}
	}
	return nil
}

// buildOne compiles, assembles and stores the image of one service.
func (o *options) buildOne(ctx context.Context, svc string) error {
	ref := o.image
	if ref == "" {
		ref = o.repo + "/" + svc + ":" + o.tag
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	start := time.Now()
	tmp, err := os.MkdirTemp("", "imagebuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	base, err := baseLayer(o.caFile, o.created)
	if err != nil {
		return err
	}
	var imgs []v1.Image
	for _, p := range o.platforms {
		bin := filepath.Join(tmp, svc+"-"+strings.ReplaceAll(p.String(), "/", "-"))
		if err := o.compile(ctx, svc, p, bin); err != nil {
			return err
		}
		img, err := assemble(svc, p, bin, base, o.labels(svc), o.created)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	var digest v1.Hash
	if len(imgs) == 1 {
		digest, err = writeImage(o.layoutDir, ref, o.platforms[0], imgs[0])
	} else {
		digest, err = writeIndex(o.layoutDir, ref, o.platforms, imgs)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", o.layoutDir, err)
	}
	if o.tarDir != "" {
		if err := os.MkdirAll(o.tarDir, 0o755); err != nil {
			return err
		}
		if err := writeTarball(filepath.Join(o.tarDir, svc+".tar"), parsed, imgs[0]); err != nil {
			return err
		}
	}
	fmt.Printf("%s %s@%s (%s) in %s\n", svc, ref, digest, platformList(o.platforms), time.Since(start).Round(time.Millisecond))
	if o.push {
		if err := push(ctx, parsed, o.platforms, imgs); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Printf("%s pushed %s\n", svc, ref)
	}
	return nil
}

// push writes the image (or, for several platforms, the index) to its registry.
func push(ctx context.Context, ref name.Reference, platforms []v1.Platform, imgs []v1.Image) error {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(configKeychain{})}
	if len(imgs) == 1 {
		return remote.Write(ref, imgs[0], opts...)
	}
	idx, err := index(platforms, imgs)
	if err != nil {
		return err
	}
	return remote.WriteIndex(ref, idx, opts...)
}

// parsePlatforms reads os/arch[/variant] entries; only linux is built.
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", f, err)
		}
		if p.OS != "linux" {
			return nil, fmt.Errorf("platform %q: only linux images are built", f)
		}
		if p.Architecture == "arm" && p.Variant == "" {
			p.Variant = "v7"
		}
		if slices.ContainsFunc(out, func(q v1.Platform) bool { return q.Equals(*p) }) {
			continue
		}
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, errors.New("no -platform given")
	}
	return out, nil
}

func platformList(ps []v1.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// findRoot walks up from the working directory to the folder holding go.work.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory; pass -root")
		}
		dir = parent
	}
}
