package identity

import (
	"context"
	"crypto/ed25519"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

var services = []string{Gateway, "auth", "link", "analytics", "moderation", "quota"}

var (
	setOnce sync.Once
	set     KeySet
)

// keysOf returns the keys of service name from one key set shared by the tests.
func keysOf(t *testing.T, name string) *Keys {
	t.Helper()
	setOnce.Do(func() {
		var err error
		if set, err = GenerateKeySet(services...); err != nil {
			t.Fatal(err)
		}
	})
	k, err := NewKeys(name, set.Keys[name], set.Certs)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCallerRoundTrip(t *testing.T) {
	gw, link := keysOf(t, Gateway), keysOf(t, "link")
	for _, c := range []Caller{Anonymous, {UserID: "u1", Role: "moderator", Status: "active", IPHash: strings.Repeat("ab", 32), UserAgent: "curl/8", QuotaLimit: 250}} {
		tok, err := gw.SignCaller(c, "link")
		if err != nil {
			t.Fatal(err)
		}
		got, err := link.Verify(tok)
		if err != nil || got != c {
			t.Fatalf("Verify = %+v, %v; want %+v", got, err, c)
		}
	}
}

// A token is addressed to one service: every other refuses it, whoever it is for.
func TestTokenForOneServiceRefusedByAnother(t *testing.T) {
	gw := keysOf(t, Gateway)
	for _, to := range services[1:] {
		tok, err := gw.SignCaller(Caller{UserID: "u1", Role: RoleSuperAdmin}, to)
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range services[1:] {
			_, err := keysOf(t, other).Verify(tok)
			if (err == nil) != (other == to) {
				t.Errorf("token for %s at %s: err = %v", to, other, err)
			}
		}
	}
}

// A service passes the caller on to a peer, through as many hops as the services take, and
// the last one sees the caller the gateway named.
func TestPassedOnThroughServices(t *testing.T) {
	caller := Caller{UserID: "m1", Role: RoleModerator, Status: "active", IPHash: "iph", UserAgent: "ua"}
	ctx, err := keysOf(t, Gateway).WithCaller(context.Background(), caller)
	if err != nil {
		t.Fatal(err)
	}
	path := []string{"moderation", "link", "moderation", "quota"}
	for _, hop := range path {
		tok, err := TokenFor(ctx, hop)
		if err != nil {
			t.Fatal(err)
		}
		k := keysOf(t, hop)
		got, err := k.Verify(tok)
		if err != nil || got != caller {
			t.Fatalf("at %s: %+v, %v; want %+v", hop, got, err, caller)
		}
		ctx = k.Received(context.Background(), tok)
	}
}

func TestPassedOnRefusals(t *testing.T) {
	gw, link, quota := keysOf(t, Gateway), keysOf(t, "link"), keysOf(t, "quota")
	forAuth, _ := gw.SignCaller(Caller{UserID: "u1", Role: RoleSuperAdmin}, "auth")
	// link passes on a token it was never sent (one addressed to auth).
	stolen, _ := link.passOn(forAuth, "quota")
	if _, err := quota.Verify(stolen); err == nil {
		t.Error("quota accepted a token link passed on but was never sent")
	}
	// A chain longer than any path the services take.
	tok, _ := gw.SignCaller(Anonymous, "link")
	from := "link"
	for i := range maxChain {
		to := []string{"quota", "link"}[i%2]
		tok, _ = keysOf(t, from).passOn(tok, to)
		from = to
	}
	if _, err := keysOf(t, from).Verify(tok); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Errorf("chain of %d hops: %v", maxChain+1, err)
	}
}

// Only the gateway names callers: a service signing caller claims with its own key is
// refused, and its keys refuse to sign them at all.
func TestOnlyTheGatewayNamesCallers(t *testing.T) {
	link, mod := keysOf(t, "link"), keysOf(t, "moderation")
	if _, err := link.SignCaller(Caller{UserID: "u1", Role: RoleSuperAdmin}, "moderation"); err == nil {
		t.Error("link signed a caller token")
	}
	if _, err := link.WithCaller(context.Background(), Caller{UserID: "u1", Role: RoleSuperAdmin}); err == nil {
		t.Error("link acted for a caller of its choosing")
	}
	forged, err := link.sign(claims{Role: RoleSuperAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: "u1"}}, "moderation")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := mod.Verify(forged); err == nil {
		t.Errorf("moderation accepted caller claims signed by link: %+v", c)
	}
	if _, err := keysOf(t, Gateway).SignCaller(Caller{UserID: "u1", Role: RoleService}, "link"); err == nil {
		t.Error("the gateway gave the service role")
	}
}

func TestServiceToken(t *testing.T) {
	tok, err := TokenFor(keysOf(t, "link").AsService(context.Background()), "moderation")
	if err != nil {
		t.Fatal(err)
	}
	c, err := keysOf(t, "moderation").Verify(tok)
	if err != nil || !c.IsService("link") || c.IsService("auth") || c.IsAnonymous() || c.AtLeastModerator() || c.UserID != "" {
		t.Fatalf("Verify = %+v, %v; want link acting as itself", c, err)
	}
	if tok, _ := TokenFor(context.Background(), "link"); tok != "" {
		t.Errorf("a context acting for no one carries %q", tok)
	}
}

func TestRejects(t *testing.T) {
	gw, link := keysOf(t, Gateway), keysOf(t, "link")
	good, _ := gw.SignCaller(Caller{UserID: "u1", Role: "user"}, "link")

	other, err := GenerateKeySet(Gateway)
	if err != nil {
		t.Fatal(err)
	}
	otherGW, _ := NewKeys(Gateway, other.Keys[Gateway], other.Certs)
	forged, _ := otherGW.SignCaller(Caller{UserID: "u1", Role: "super_admin"}, "link")

	expiredKeys := keysOf(t, Gateway)
	expiredKeys.now = func() time.Time { return time.Now().Add(-2 * time.Minute) }
	expired, _ := expiredKeys.SignCaller(Caller{UserID: "u1", Role: "user"}, "link")

	signed := func(method jwt.SigningMethod, key any, mc jwt.MapClaims) string {
		mc["iat"] = time.Now().Unix()
		if _, ok := mc["exp"]; !ok {
			mc["exp"] = time.Now().Add(time.Minute).Unix()
		}
		s, err := jwt.NewWithClaims(method, mc).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	priv, _ := ParsePrivateKey(set.Keys[Gateway])
	user := func(extra jwt.MapClaims) jwt.MapClaims {
		mc := jwt.MapClaims{"role": "user", "sub": "u1", "iss": Gateway, "aud": "link"}
		for k, v := range extra {
			mc[k] = v
		}
		return mc
	}
	pub := priv.Public().(ed25519.PublicKey)
	noneTok := signed(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, user(nil))
	cases := map[string]string{
		"other gateway key": forged, "expired": expired, "alg none": noneTok,
		// The public key used as an HMAC secret: the classic algorithm confusion.
		"HS256 with the public key": signed(jwt.SigningMethodHS256, []byte(pub), user(nil)),
		"two audiences":             signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"aud": []string{"link", "quota"}})),
		"no audience":               signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"aud": nil})),
		"unknown issuer":            signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"iss": "intruder"})),
		"long-lived":                signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"exp": time.Now().Add(24 * time.Hour).Unix()})),
		"unknown role":              signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"role": "root"})),
		"service role":              signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"role": RoleService})),
		"anonymous with subject":    signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"role": RoleAnonymous})),
		"gateway passing on":        signed(jwt.SigningMethodEdDSA, priv, user(jwt.MapClaims{"obo": good})),
		"garbage":                   "a.b.c", "tampered": good[:len(good)-2] + "xx", "empty": "",
	}
	for name, tok := range cases {
		if c, err := link.Verify(tok); err == nil {
			t.Errorf("%s: token accepted as %+v", name, c)
		}
	}
}

func TestNewKeysRefusesMismatchedMaterial(t *testing.T) {
	keysOf(t, Gateway) // fills set
	gwOnly, _ := GenerateKeySet(Gateway)
	noGateway, _ := GenerateKeySet("link")
	cases := map[string][3]string{
		"key of another service":  {"link", set.Keys["quota"], set.Certs},
		"no certificate for self": {"link", set.Keys["link"], gwOnly.Certs},
		"no gateway certificate":  {"link", noGateway.Keys["link"], noGateway.Certs},
		"duplicate certificate":   {"link", set.Keys["link"], set.Certs + gwOnly.Certs},
		"garbage key":             {"link", "not a key", set.Certs},
		"garbage certificates":    {"link", set.Keys["link"], "not PEM"},
		"certificates and text":   {"link", set.Keys["link"], set.Certs + "trailing"},
		"no certificates":         {"link", set.Keys["link"], ""},
		"a certificate as key":    {"link", set.Certs, set.Certs},
	}
	for name, c := range cases {
		if _, err := NewKeys(c[0], c[1], c[2]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Keys and certificates made the ways the README tells operators (openssl) and the chart
// makes them (Helm's genPrivateKey and genSelfSignedCertWithKey) are read.
func TestReadsOpenSSLAndHelmMaterial(t *testing.T) {
	for _, maker := range []string{"openssl", "helm"} {
		key, err := os.ReadFile("testdata/" + maker + "-gateway.key")
		if err != nil {
			t.Fatal(err)
		}
		cert, err := os.ReadFile("testdata/" + maker + "-gateway.crt")
		if err != nil {
			t.Fatal(err)
		}
		k, err := NewKeys(Gateway, string(key), string(cert))
		if err != nil {
			t.Fatalf("%s: %v", maker, err)
		}
		tok, err := k.SignCaller(Anonymous, Gateway)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Verify(tok); err != nil {
			t.Errorf("%s: %v", maker, err)
		}
	}
}

// Require lets in callers the gateway named, passed on or not, and a service acting as itself
// only when named; a call it lets in passes the caller on.
func TestRequire(t *testing.T) {
	mod := keysOf(t, "moderation")
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		status, msg, _ := errs.Response(err)
		return c.Status(status).SendString(msg)
	}})
	app.Get("/x", Require(mod, "link"), func(c *fiber.Ctx) error {
		onward, err := TokenFor(c.UserContext(), "quota")
		if err != nil {
			return err
		}
		onwardCaller, err := keysOf(t, "quota").Verify(onward)
		if err != nil {
			return err
		}
		return c.SendString(CallerOf(c).Role + "|" + CallerOf(c).Service + "|" + onwardCaller.UserID)
	})
	gwCtx, _ := keysOf(t, Gateway).WithCaller(context.Background(), Caller{UserID: "u1", Role: RoleUser})
	fromGateway, _ := TokenFor(gwCtx, "moderation")
	linkReceived := keysOf(t, "link").Received(context.Background(), mustToken(t, gwCtx, "link"))
	passedOn, _ := TokenFor(linkReceived, "moderation")
	asLink, _ := TokenFor(keysOf(t, "link").AsService(context.Background()), "moderation")
	asQuota, _ := TokenFor(keysOf(t, "quota").AsService(context.Background()), "moderation")
	for _, tc := range []struct {
		name, token string
		status      int
		body        string
	}{
		{"from the gateway", fromGateway, 200, "user||u1"},
		{"passed on by link", passedOn, 200, "user||u1"},
		{"link as itself", asLink, 200, "service|link|"},
		{"quota as itself", asQuota, 401, MsgTokenInvalid},
		{"none", "", 401, MsgTokenRequired},
	} {
		req, _ := http.NewRequest("GET", "/x", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || string(body) != tc.body {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}
}

func mustToken(t *testing.T, ctx context.Context, audience string) string {
	t.Helper()
	tok, err := TokenFor(ctx, audience)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// The cost of one call's token: the gateway signs, the receiver verifies; one hop further, the
// receiver signs a passed-on token and the next verifies the chain of two.
func BenchmarkCallerToken(b *testing.B) {
	set, err := GenerateKeySet(services...)
	if err != nil {
		b.Fatal(err)
	}
	gw, _ := NewKeys(Gateway, set.Keys[Gateway], set.Certs)
	link, _ := NewKeys("link", set.Keys["link"], set.Certs)
	quota, _ := NewKeys("quota", set.Keys["quota"], set.Certs)
	caller := Caller{UserID: "u1", Role: RoleUser, Status: "active", IPHash: strings.Repeat("ab", 32), UserAgent: "Mozilla/5.0"}
	b.Run("gateway to link", func(b *testing.B) {
		for b.Loop() {
			tok, _ := gw.SignCaller(caller, "link")
			if _, err := link.Verify(tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	tok, _ := gw.SignCaller(caller, "link")
	b.Run("link passes on to quota", func(b *testing.B) {
		for b.Loop() {
			onward, _ := link.passOn(tok, "quota")
			if _, err := quota.Verify(onward); err != nil {
				b.Fatal(err)
			}
		}
	})
}
