package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// refName is the annotation that names an image in an OCI image layout.
const refName = "org.opencontainers.image.ref.name"

// openLayout opens the layout at dir, creating an empty one if there is none, and holds an
// exclusive lock on it until release is called: skaffold may build several artifacts at
// once, and index.json is rewritten whole.
func openLayout(dir string) (p layout.Path, release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return "", nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	release = func() { lock.Close() } // closing drops the lock
	if p, err = layout.FromPath(dir); err != nil {
		if p, err = layout.Write(dir, mutate.IndexMediaType(empty.Index, types.OCIImageIndex)); err != nil {
			release()
			return "", nil, err
		}
	}
	return p, release, nil
}

// writeImage stores img under ref, replacing what had that name, and returns its digest.
func writeImage(dir, ref string, platform v1.Platform, img v1.Image) (v1.Hash, error) {
	p, release, err := openLayout(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	defer release()
	if err := p.ReplaceImage(img, match.Name(ref), layout.WithAnnotations(map[string]string{refName: ref}), layout.WithPlatform(platform)); err != nil {
		return v1.Hash{}, err
	}
	if err := collectGarbage(dir); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// index makes the image index of one image per platform.
func index(platforms []v1.Platform, imgs []v1.Image) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for i, img := range imgs {
		desc, err := partialDescriptor(img)
		if err != nil {
			return nil, err
		}
		desc.Platform = &platforms[i]
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: desc})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

func partialDescriptor(img v1.Image) (v1.Descriptor, error) {
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Size: size, Digest: digest}, nil
}

// writeIndex stores one image per platform under ref as an image index.
func writeIndex(dir, ref string, platforms []v1.Platform, imgs []v1.Image) (v1.Hash, error) {
	idx, err := index(platforms, imgs)
	if err != nil {
		return v1.Hash{}, err
	}
	p, release, err := openLayout(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	defer release()
	if err := p.ReplaceIndex(idx, match.Name(ref), layout.WithAnnotations(map[string]string{refName: ref})); err != nil {
		return v1.Hash{}, err
	}
	if err := collectGarbage(dir); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// writeTarball writes img as a docker-archive tarball tagged ref (atomically).
func writeTarball(path string, ref name.Reference, img v1.Image) error {
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// collectGarbage removes the blobs that index.json no longer reaches, so that rebuilding
// an image does not keep every earlier build's layers. Call it holding the layout's lock.
func collectGarbage(dir string) error {
	live := map[string]bool{}
	var walk func(desc v1.Descriptor) error
	walk = func(desc v1.Descriptor) error {
		key := desc.Digest.Algorithm + "/" + desc.Digest.Hex
		if live[key] {
			return nil
		}
		live[key] = true
		if !desc.MediaType.IsIndex() && !desc.MediaType.IsImage() {
			return nil
		}
		raw, err := os.ReadFile(filepath.Join(dir, "blobs", desc.Digest.Algorithm, desc.Digest.Hex))
		if err != nil {
			return err
		}
		var m struct {
			Manifests []v1.Descriptor `json:"manifests"`
			Config    *v1.Descriptor  `json:"config"`
			Layers    []v1.Descriptor `json:"layers"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("read %s: %w", desc.Digest, err)
		}
		children := append(m.Manifests, m.Layers...)
		if m.Config != nil {
			children = append(children, *m.Config)
		}
		for _, c := range children {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return err
	}
	var top v1.IndexManifest
	if err := json.Unmarshal(raw, &top); err != nil {
		return fmt.Errorf("read index.json: %w", err)
	}
	for _, d := range top.Manifests {
		if err := walk(d); err != nil {
			return err
		}
	}
	blobs := filepath.Join(dir, "blobs")
	return filepath.WalkDir(blobs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(blobs, path)
		if err != nil {
			return err
		}
		if !live[filepath.ToSlash(rel)] {
			return os.Remove(path)
		}
		return nil
	})
}
