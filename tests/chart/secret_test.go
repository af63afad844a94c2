package chart

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/linkmesh/linkmesh/pkg/identity"
)

// The variables every service reads from the internal key material, and the Secret key of the
// certificates (the private keys' keys are per service, see secretKeyOf).
const (
	varInternalKey   = "LINKMESH_INTERNAL_KEY"
	varInternalCerts = "LINKMESH_INTERNAL_CERTS"
)

// secretKeyOf is the key of the Secret service svc reads the secret variable from: the
// variable's name, except for the service's own private key, LINKMESH_INTERNAL_KEY_<SVC>.
func secretKeyOf(svc, variable string) string {
	if variable == varInternalKey {
		return internalKeyOf(svc)
	}
	return variable
}

// internalKeyOf is the Secret key holding svc's private key.
func internalKeyOf(svc string) string { return varInternalKey + "_" + strings.ToUpper(svc) }

// internalMaterial are the Secret keys of the internal key material: the six private keys and
// the certificates.
func internalMaterial() []string {
	keys := []string{varInternalCerts}
	for _, svc := range services {
		keys = append(keys, internalKeyOf(svc))
	}
	return keys
}

// secretName is the Secret the services read: an existingSecret if the values name one, else
// the chart's own.
func (m manifests) secretName() string {
	if s, _ := value(m.values, "secrets.existingSecret").(string); s != "" {
		return s
	}
	return fullname
}

// secretOf is the data of the chart's Secret in m, decoded.
func secretOf(t testing.TB, m manifests) map[string]string {
	t.Helper()
	o := m.must(t, "Secret", fullname)
	if o.Metadata.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("Secret %s: no helm.sh/resource-policy: keep", fullname)
	}
	var s secret
	o.decode(t, &s)
	out := map[string]string{}
	for k, v := range s.Data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("Secret key %s: %v", k, err)
		}
		out[k] = string(b)
	}
	return out
}

// checkKeySet checks that data holds a private key per service that the service accepts
// (identity.NewKeys, as each service does at start-up: its key must match its own certificate
// and the gateway's must be there), the six certificates and nothing more of the kind, and that
// a caller token the gateway signs is accepted by every other service.
func checkKeySet(t testing.TB, data map[string]string) {
	t.Helper()
	certs := data[varInternalCerts]
	pubs, err := identity.ParseCertificates(certs)
	if err != nil {
		t.Fatalf("%s: %v", varInternalCerts, err)
	}
	if names := slices.Sorted(maps.Keys(pubs)); !slices.Equal(names, slices.Sorted(slices.Values(services))) {
		t.Errorf("%s: certificates of %v, want one for each of %v", varInternalCerts, names, services)
	}
	for name, keys := range pubs {
		if len(keys) != 1 {
			t.Errorf("%s: %d certificates of %s, want one", varInternalCerts, len(keys), name)
		}
	}
	keys := map[string]*identity.Keys{}
	for _, svc := range services {
		k, err := identity.NewKeys(svc, data[internalKeyOf(svc)], certs)
		if err != nil {
			t.Errorf("%s: %s refused by the service: %v", svc, internalKeyOf(svc), err)
			continue
		}
		keys[svc] = k
		// A key is its service's alone: it matches no other service's certificate.
		for _, other := range services {
			if other == svc {
				continue
			}
			if _, err := identity.NewKeys(other, data[internalKeyOf(svc)], certs); err == nil {
				t.Errorf("%s's key is accepted as %s's", svc, other)
			}
		}
	}
	for k := range data {
		if strings.HasPrefix(k, varInternalKey+"_") && !slices.Contains(internalMaterial(), k) {
			t.Errorf("Secret holds %s, the key of no service", k)
		}
	}
	gw, ok := keys[identity.Gateway]
	if !ok {
		return
	}
	caller := identity.Caller{UserID: "u1", Role: identity.RoleUser, Status: "active"}
	ctx, err := gw.WithCaller(context.Background(), caller)
	if err != nil {
		t.Fatal(err)
	}
	// Every edge of the call graph carries the caller: the gateway's token to the services it
	// calls, passed on by each of those to the services they call.
	for _, first := range identity.Calls[identity.Gateway] {
		tok, err := identity.TokenFor(ctx, first)
		if err != nil {
			t.Fatalf("gateway signs for %s: %v", first, err)
		}
		k, ok := keys[first]
		if !ok {
			continue
		}
		if got, err := k.Verify(tok); err != nil || got.UserID != caller.UserID {
			t.Errorf("%s: the gateway's token: %+v, %v", first, got, err)
			continue
		}
		onward := k.Received(context.Background(), tok)
		for _, next := range identity.Calls[first] {
			tok, err := identity.TokenFor(onward, next)
			if err != nil {
				t.Fatalf("%s signs for %s: %v", first, next, err)
			}
			if k, ok := keys[next]; ok {
				if got, err := k.Verify(tok); err != nil || got.UserID != caller.UserID {
					t.Errorf("%s: the token %s passed on: %+v, %v", next, first, got, err)
				}
			}
		}
	}
}

// writeValues writes values as a YAML file in a temporary folder and returns its path.
func writeValues(t testing.TB, values map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// keySetValues are the values giving keys (by service, a missing one left out) and certs.
func keySetValues(keys map[string]string, certs string) map[string]any {
	internalKeys := map[string]any{}
	for svc, k := range keys {
		internalKeys[svc] = k
	}
	secrets := map[string]any{"internalKeys": internalKeys}
	if certs != "" {
		secrets["internalCerts"] = certs
	}
	return map[string]any{"secrets": secrets}
}

func generateKeySet(t testing.TB) identity.KeySet {
	t.Helper()
	set, err := identity.GenerateKeySet(services...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// fakeCluster is a Kubernetes API server that knows only the Secrets of namespace it is given:
// enough for the chart's lookup under helm template --dry-run=server, which is how helm
// upgrade renders against a cluster.
type fakeCluster struct {
	kubeconfig string
	mu         sync.Mutex
	secrets    map[string]map[string]string // name → data, not encoded
	lookups    []string                     // the names of the Secrets read
}

func newFakeCluster(t testing.TB) *fakeCluster {
	t.Helper()
	c := &fakeCluster{secrets: map[string]map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(srv.Close)
	c.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
  - name: fake
    cluster: {server: %q}
contexts:
  - name: fake
    context: {cluster: fake, user: fake, namespace: %s}
current-context: fake
users:
  - name: fake
    user: {token: fake}
`, srv.URL, namespace)
	if err := os.WriteFile(c.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *fakeCluster) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	secretPrefix := "/api/v1/namespaces/" + namespace + "/secrets/"
	switch {
	case r.Method != http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"MethodNotAllowed","code":405}`)
	case r.URL.Path == "/api":
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
	case r.URL.Path == "/api/v1":
		fmt.Fprint(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"secrets","singularName":"secret","namespaced":true,"kind":"Secret","verbs":["get","list"]}]}`)
	case strings.HasPrefix(r.URL.Path, secretPrefix):
		name := strings.TrimPrefix(r.URL.Path, secretPrefix)
		c.mu.Lock()
		c.lookups = append(c.lookups, name)
		data, ok := c.secrets[name]
		c.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"secrets %q not found"}`, name)
			return
		}
		encoded := map[string]string{}
		for k, v := range data {
			encoded[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata": map[string]any{"name": name, "namespace": namespace},
			"data":     encoded,
		})
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}
}

// put stores (or with nil data, deletes) the Secret name.
func (c *fakeCluster) put(name string, data map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if data == nil {
		delete(c.secrets, name)
		return
	}
	c.secrets[name] = maps.Clone(data)
}

// render renders against the cluster, as helm install and helm upgrade do, and checks that the
// chart read its own Secret.
func (c *fakeCluster) render(t testing.TB, files []string, sets ...string) (manifests, error) {
	t.Helper()
	c.mu.Lock()
	c.lookups = nil
	c.mu.Unlock()
	out, err := helmTemplateWith(t, []string{"--dry-run=server", "--kubeconfig", c.kubeconfig}, files, sets...)
	if err != nil {
		return manifests{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.lookups, fullname) {
		t.Errorf("the chart did not look up the Secret %s in the cluster (read %v)", fullname, c.lookups)
	}
	return manifests{objects: parse(t, out), values: computedValues(t, files, sets)}, nil
}

func (c *fakeCluster) mustRender(t testing.TB, files []string, sets ...string) manifests {
	t.Helper()
	m, err := c.render(t, files, sets...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Each service's container reads LINKMESH_INTERNAL_KEY from its own key of the Secret, never
// another service's, and LINKMESH_INTERNAL_CERTS from the one bundle, in every value set; the
// chart's Secret holds the six keys and the certificates.
func TestInternalKeyPerService(t *testing.T) {
	for _, name := range sortedNames(valueSets(t)) {
		t.Run(name, func(t *testing.T) {
			m := renderSet(t, name)
			secretName := m.secretName()
			if secretName == fullname {
				data := secretOf(t, m)
				for _, k := range internalMaterial() {
					if data[k] == "" {
						t.Errorf("the chart's Secret has no %s", k)
					}
				}
				if _, ok := data["LINKMESH_INTERNAL_SECRET"]; ok {
					t.Error("the chart's Secret still holds LINKMESH_INTERNAL_SECRET")
				}
			}
			for svc, d := range m.deployments(t) {
				want := map[string]string{varInternalKey: internalKeyOf(svc), varInternalCerts: varInternalCerts}
				got := map[string]string{}
				for _, c := range d.Spec.Template.Spec.Containers {
					for _, e := range c.Env {
						if e.Name == "LINKMESH_INTERNAL_SECRET" {
							t.Errorf("%s: still gets LINKMESH_INTERNAL_SECRET", svc)
						}
						if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
							if _, ok := want[e.Name]; ok {
								t.Errorf("%s: %s given as a plain value", svc, e.Name)
							}
							continue
						}
						ref := e.ValueFrom.SecretKeyRef
						if strings.HasPrefix(ref.Key, varInternalKey+"_") && ref.Key != internalKeyOf(svc) {
							t.Errorf("%s: %s from %s, another service's key", svc, e.Name, ref.Key)
						}
						if _, ok := want[e.Name]; !ok {
							continue
						}
						if ref.Name != secretName {
							t.Errorf("%s: %s from the Secret %s, want %s", svc, e.Name, ref.Name, secretName)
						}
						if ref.Optional != nil && *ref.Optional {
							t.Errorf("%s: %s is optional; the service does not start without it", svc, e.Name)
						}
						got[e.Name] = ref.Key
					}
				}
				if !maps.Equal(got, want) {
					t.Errorf("%s: internal key material from %v, want %v", svc, got, want)
				}
			}
		})
	}
}

// The keys and certificates Helm generates (genPrivateKey "ed25519", genSelfSignedCertWithKey)
// are what the services accept: each service's key matches its own certificate, and tokens
// signed with one verify with the others' certificates. Every installation gets new ones.
func TestGeneratedInternalKeysParse(t *testing.T) {
	a := secretOf(t, renderSet(t, "default"))
	checkKeySet(t, a)
	b := secretOf(t, render(t, nil))
	for _, k := range internalMaterial() {
		if a[k] == b[k] {
			t.Errorf("%s is the same in two renderings: not generated", k)
		}
	}
	for i, x := range services {
		for _, y := range services[i+1:] {
			if a[internalKeyOf(x)] == a[internalKeyOf(y)] {
				t.Errorf("%s and %s have the same key", x, y)
			}
		}
	}
}

// Keys and certificates given in values are used as they are, whether from a values file or
// --set-file with the files the README's openssl commands make.
func TestGivenInternalKeysUsedAsGiven(t *testing.T) {
	set := generateKeySet(t)
	m := render(t, []string{writeValues(t, keySetValues(set.Keys, set.Certs))})
	data := secretOf(t, m)
	for _, svc := range services {
		if data[internalKeyOf(svc)] != set.Keys[svc] {
			t.Errorf("%s: the given key is not used as it is", svc)
		}
	}
	if data[varInternalCerts] != set.Certs {
		t.Error("the given certificates are not used as they are")
	}
	checkKeySet(t, data)
	// Given keys are values: changing them rolls the pods.
	ann := func(m manifests) string {
		return m.deployments(t)["gateway"].Spec.Template.Metadata.Annotations["checksum/secret"]
	}
	if ann(m) == ann(renderSet(t, "default")) {
		t.Error("checksum/secret does not change with the given internal keys")
	}

	t.Run("openssl", func(t *testing.T) {
		openssl, err := exec.LookPath("openssl")
		if err != nil {
			t.Fatal("openssl not found (make deps installs it)")
		}
		dir := t.TempDir()
		var args []string
		var certs []byte
		for _, svc := range services {
			key, crt := filepath.Join(dir, svc+".key"), filepath.Join(dir, svc+".crt")
			for _, cmd := range [][]string{
				{"genpkey", "-algorithm", "ed25519", "-out", key},
				{"req", "-x509", "-new", "-key", key, "-subj", "/CN=" + svc, "-days", "36500", "-out", crt},
			} {
				if out, err := exec.Command(openssl, cmd...).CombinedOutput(); err != nil {
					t.Fatalf("openssl %v: %v\n%s", cmd, err, out)
				}
			}
			b, err := os.ReadFile(crt)
			if err != nil {
				t.Fatal(err)
			}
			certs = append(certs, b...)
			args = append(args, "--set-file", "secrets.internalKeys."+svc+"="+key)
		}
		bundle := filepath.Join(dir, "certs.pem")
		if err := os.WriteFile(bundle, certs, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--set-file", "secrets.internalCerts="+bundle)
		out, err := helmTemplateWith(t, args, nil)
		if err != nil {
			t.Fatal(err)
		}
		data := secretOf(t, manifests{objects: parse(t, out)})
		if data[varInternalCerts] != string(certs) {
			t.Error("the certificates given with --set-file are not used as they are")
		}
		checkKeySet(t, data)
	})
}

// Keys and certificates are given all together or not at all: a part is refused, as is a bundle
// without a certificate for every service and what is not a PEM private key.
func TestPartialInternalKeysRefused(t *testing.T) {
	set := generateKeySet(t)
	without := func(svc string) map[string]string {
		keys := maps.Clone(set.Keys)
		delete(keys, svc)
		return keys
	}
	const together = "secrets.internalKeys (all six services) and secrets.internalCerts are given together"
	threeCerts := strings.Join(strings.SplitAfter(set.Certs, "-----END CERTIFICATE-----\n")[:3], "")
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"one key and the certificates", keySetValues(map[string]string{"gateway": set.Keys["gateway"]}, set.Certs), together},
		{"five keys and the certificates", keySetValues(without("quota"), set.Certs), "not secrets.internalKeys.quota"},
		{"the keys without the certificates", keySetValues(set.Keys, ""), "not secrets.internalCerts"},
		{"the certificates without the keys", keySetValues(nil, set.Certs), together},
		{"one key alone", keySetValues(map[string]string{"link": set.Keys["link"]}, ""), together},
		{"three certificates", keySetValues(set.Keys, threeCerts), "secrets.internalCerts holds 3 certificates"},
		{"a certificate for a key", keySetValues(map[string]string{
			"gateway": set.Certs, "auth": set.Keys["auth"], "link": set.Keys["link"], "analytics": set.Keys["analytics"],
			"moderation": set.Keys["moderation"], "quota": set.Keys["quota"]}, set.Certs), "values don't meet the specifications of the schema"},
		{"a key for the certificates", keySetValues(set.Keys, set.Keys["gateway"]), "values don't meet the specifications of the schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := helmTemplate(t, []string{writeValues(t, c.values)})
			if err == nil {
				t.Fatal("rendered")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("failed, but not with %q:\n%v", c.want, err)
			}
		})
	}
	// With an existing Secret the values are not read: no check.
	if _, err := helmTemplate(t, []string{writeValues(t, keySetValues(without("auth"), ""))}, "secrets.existingSecret=mine"); err != nil {
		t.Errorf("existingSecret and a part of the keys in values: %v", err)
	}
}

// What the chart's Secret generates is made once: helm upgrade reads it back from the cluster
// (lookup) and renders it unchanged, the internal keys and certificates always together, and
// Helm never deletes the Secret (helm.sh/resource-policy: keep). Rendered against a fake API
// server holding the Secret, as helm upgrade renders against the cluster.
func TestGeneratedSecretsAreKept(t *testing.T) {
	cluster := newFakeCluster(t)

	// Install: nothing in the cluster, everything generated.
	installed := cluster.mustRender(t, nil)
	first := secretOf(t, installed)
	checkKeySet(t, first)
	if len(first["LINKMESH_IDENTITY_SECRET"]) < 32 {
		t.Errorf("generated LINKMESH_IDENTITY_SECRET has %d characters, want at least 32", len(first["LINKMESH_IDENTITY_SECRET"]))
	}
	if second := secretOf(t, render(t, nil)); second["LINKMESH_IDENTITY_SECRET"] == first["LINKMESH_IDENTITY_SECRET"] {
		t.Error("LINKMESH_IDENTITY_SECRET is the same in two renderings: not generated")
	}

	// Upgrade: the Secret is in the cluster, and rendered again as it is.
	cluster.put(fullname, first)
	upgraded := cluster.mustRender(t, nil)
	if got := secretOf(t, upgraded); !maps.Equal(got, first) {
		for k := range first {
			if got[k] != first[k] {
				t.Errorf("upgrade: %s changed", k)
			}
		}
		t.Errorf("upgrade: the Secret changed (keys %v, were %v)", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(first)))
	}
	// ...and the pods' secret checksum does not change with the generated values, so an
	// upgrade does not restart them.
	for svc, d := range installed.deployments(t) {
		a := d.Spec.Template.Metadata.Annotations["checksum/secret"]
		if b := upgraded.deployments(t)[svc].Spec.Template.Metadata.Annotations["checksum/secret"]; a == "" || a != b {
			t.Errorf("%s: checksum/secret %q at install, %q at upgrade", svc, a, b)
		}
		if c := renderSet(t, "default").deployments(t)[svc].Spec.Template.Metadata.Annotations["checksum/secret"]; c != a {
			t.Errorf("%s: checksum/secret changes between two renderings of the same values", svc)
		}
	}

	// Values win over what the cluster has, all of it.
	given := generateKeySet(t)
	withValues := secretOf(t, cluster.mustRender(t, []string{writeValues(t, keySetValues(given.Keys, given.Certs))}))
	for _, svc := range services {
		if withValues[internalKeyOf(svc)] != given.Keys[svc] {
			t.Errorf("values and a kept Secret: %s's key is not the given one", svc)
		}
	}
	if withValues[varInternalCerts] != given.Certs {
		t.Error("values and a kept Secret: the certificates are not the given ones")
	}

	// Upgrade from a chart that had one shared internal secret: the identity secret is kept,
	// the key material generated, the old key gone.
	cluster.put(fullname, map[string]string{
		"LINKMESH_INTERNAL_SECRET": strings.Repeat("i", 48), "LINKMESH_IDENTITY_SECRET": first["LINKMESH_IDENTITY_SECRET"],
		"LINKMESH_MONGODB_URI": "mongodb://old:27017/", "LINKMESH_REDIS_URL": "redis://old:6379/0",
	})
	migrated := secretOf(t, cluster.mustRender(t, nil))
	checkKeySet(t, migrated)
	if migrated["LINKMESH_IDENTITY_SECRET"] != first["LINKMESH_IDENTITY_SECRET"] {
		t.Error("upgrade from the shared internal secret: the identity secret was not kept")
	}
	if _, ok := migrated["LINKMESH_INTERNAL_SECRET"]; ok {
		t.Error("upgrade from the shared internal secret: LINKMESH_INTERNAL_SECRET still in the Secret")
	}

	// A Secret holding only part of the key material is refused: completing it would make keys
	// that match no certificate, or certificates of keys no service has.
	for _, drop := range []string{varInternalCerts, internalKeyOf("gateway"), internalKeyOf("quota")} {
		partial := maps.Clone(first)
		delete(partial, drop)
		cluster.put(fullname, partial)
		_, err := cluster.render(t, nil)
		if err == nil || !strings.Contains(err.Error(), "holds only some of the internal key material") {
			t.Errorf("a kept Secret without %s: want a refusal, got %v", drop, err)
		}
	}
}

// A rotation as the chart README describes it, through values: the bundle holds the old and the
// new certificates (step 1, old keys; step 2, new keys), then only the new ones (step 3). Every
// step renders, rolls the pods (checksum/secret changes), and gives services that accept the
// tokens of either key while the bundle holds both.
func TestRotationThroughValues(t *testing.T) {
	old, next := generateKeySet(t), generateKeySet(t)
	steps := []struct {
		name  string
		keys  map[string]string
		certs string
	}{
		{"before", old.Keys, old.Certs},
		{"1: new certificates added", old.Keys, old.Certs + next.Certs},
		{"2: new keys in use", next.Keys, old.Certs + next.Certs},
		{"3: old certificates removed", next.Keys, next.Certs},
	}
	var last string
	for _, s := range steps {
		m := render(t, []string{writeValues(t, keySetValues(s.keys, s.certs))})
		data := secretOf(t, m)
		if data[varInternalCerts] != s.certs {
			t.Fatalf("%s: the bundle is not used as given", s.name)
		}
		for _, svc := range services {
			if _, err := identity.NewKeys(svc, data[internalKeyOf(svc)], data[varInternalCerts]); err != nil {
				t.Errorf("%s: %s does not start: %v", s.name, svc, err)
			}
		}
		sum := m.deployments(t)["link"].Spec.Template.Metadata.Annotations["checksum/secret"]
		if sum == last {
			t.Errorf("%s: the pods do not roll", s.name)
		}
		last = sum
	}
	// Step 2's pods accept the tokens step 1's pods sign, and the other way round.
	one := secretOf(t, render(t, []string{writeValues(t, keySetValues(old.Keys, old.Certs+next.Certs))}))
	two := secretOf(t, render(t, []string{writeValues(t, keySetValues(next.Keys, old.Certs+next.Certs))}))
	for _, pair := range [][2]map[string]string{{one, two}, {two, one}} {
		gw, err := identity.NewKeys("gateway", pair[0][internalKeyOf("gateway")], pair[0][varInternalCerts])
		if err != nil {
			t.Fatal(err)
		}
		link, err := identity.NewKeys("link", pair[1][internalKeyOf("link")], pair[1][varInternalCerts])
		if err != nil {
			t.Fatal(err)
		}
		tok, err := gw.SignCaller(identity.Caller{UserID: "u1", Role: identity.RoleUser}, "link")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := link.Verify(tok); err != nil {
			t.Errorf("a pod of one step refuses the other's token: %v", err)
		}
	}
}
