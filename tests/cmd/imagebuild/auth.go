package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
)

// configKeychain finds registry credentials the way docker and podman store them: the
// "auths" of $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json and
// $DOCKER_CONFIG/config.json (default ~/.docker/config.json), first match wins; anonymous
// when none has the registry. Credential helpers (credsStore) are not run.
type configKeychain struct{}

type authFile struct {
	Auths map[string]authn.AuthConfig `json:"auths"`
}

func (configKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	keys := []string{r.RegistryStr()}
	if r.RegistryStr() == "index.docker.io" {
		keys = append(keys, "https://index.docker.io/v1/", "docker.io")
	}
	for _, path := range authFiles() {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var f authFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, k := range keys {
			for _, form := range []string{k, "https://" + k} {
				if c, ok := f.Auths[form]; ok {
					return authn.FromConfig(c), nil
				}
			}
		}
	}
	return authn.Anonymous, nil
}

func authFiles() []string {
	var files []string
	if f := os.Getenv("REGISTRY_AUTH_FILE"); f != "" {
		files = append(files, f)
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		files = append(files, filepath.Join(d, "containers", "auth.json"))
	}
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		files = append(files, filepath.Join(d, "config.json"))
	} else if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".docker", "config.json"))
	}
	return files
}
