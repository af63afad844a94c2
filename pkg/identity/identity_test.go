package identity

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

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
	for _, c := range []Caller{Anonymous, {UserID: "u1", Role: "moderator", Status: "active", IPHash: strings.Repeat("ab", 32), UserAgent: "curl/8", QuotaLimit: 250, TokenID: "t-42"}} {
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

// A token is addressed to one service: every other refuses it, whoever it is for. Every edge
// of the call graph is tried, with the token its sender makes (the gateway names a caller, a
// service acts as itself).
func TestTokenForOneServiceRefusedByAnother(t *testing.T) {
	for from, tos := range Calls {
		for _, to := range tos {
			var tok string
			var err error
			if from == Gateway {
				tok, err = keysOf(t, from).SignCaller(Caller{UserID: "u1", Role: RoleSuperAdmin}, to)
			} else {
				tok, err = keysOf(t, from).signService(to)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, other := range services[1:] {
				_, err := keysOf(t, other).Verify(tok)
				if (err == nil) != (other == to) {
					t.Errorf("token from %s for %s at %s: err = %v", from, to, other, err)
				}
			}
		}
	}
}

// Tokens travel only along the call graph: a service that calls no one, or a peer it does not
// call, is refused whatever the signature.
func TestOnlyAlongTheCallGraph(t *testing.T) {
	for _, c := range [][2]string{{"quota", "auth"}, {"analytics", "moderation"}, {"link", "auth"}, {"auth", "analytics"}} {
		tok, _ := keysOf(t, c[0]).signService(c[1])
		if _, err := keysOf(t, c[1]).Verify(tok); err == nil || !strings.Contains(err.Error(), "does not call") {
			t.Errorf("%s → %s: %v", c[0], c[1], err)
		}
	}
	if tok, _ := keysOf(t, Gateway).SignCaller(Anonymous, "quota"); tok != "" {
		if _, err := keysOf(t, "quota").Verify(tok); err == nil {
			t.Error("quota accepted a caller token straight from the gateway, which never calls it")
		}
	}
}

// A service passes the caller on to a peer, through as many hops as the services take, and
// the last one sees the caller the gateway named; one hop more is refused.
func TestPassedOnThroughServices(t *testing.T) {
	caller := Caller{UserID: "m1", Role: RoleModerator, Status: "active", IPHash: "iph", UserAgent: "ua"}
	ctx, err := keysOf(t, Gateway).WithCaller(context.Background(), caller)
	if err != nil {
		t.Fatal(err)
	}
	for i, hop := range []string{"moderation", "link", "moderation", "quota"} {
		tok, err := TokenFor(ctx, hop)
		if err != nil {
			t.Fatal(err)
		}
		k := keysOf(t, hop)
		got, err := k.Verify(tok)
		if i == maxChain {
			if err == nil || !strings.Contains(err.Error(), "too many") {
				t.Fatalf("a chain of %d tokens: %+v, %v", i+1, got, err)
			}
			break
		}
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
	// Quota calls no one, so it can pass nothing on, not even to a service it could reach.
	forQuota, _ := link.passOn(mustSign(t, gw, "link"), "quota")
	fromQuota, _ := quota.passOn(forQuota, "link")
	if _, err := link.Verify(fromQuota); err == nil {
		t.Error("link accepted a token quota passed on")
	}
	// A service acting as itself addresses one peer; that peer cannot pass it on.
	asLink, _ := link.signService("moderation")
	onward, _ := keysOf(t, "moderation").passOn(asLink, "link")
	if c, err := link.Verify(onward); err == nil {
		t.Errorf("a service token passed on was accepted as %+v", c)
	}
}

func mustSign(t *testing.T, gw *Keys, audience string) string {
	t.Helper()
	tok, err := gw.SignCaller(Anonymous, audience)
	if err != nil {
		t.Fatal(err)
	}
	return tok
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
		"the same key twice":      {"link", set.Keys["link"], set.Certs + set.Certs},
		"four of one service":     {"link", set.Keys["link"], set.Certs + gwOnly.Certs + mustSet(t, Gateway).Certs + mustSet(t, Gateway).Certs},
		"garbage key":             {"link", "not a key", set.Certs},
		"garbage certificates":    {"link", set.Keys["link"], "not PEM"},
		"certificates and text":   {"link", set.Keys["link"], set.Certs + "trailing"},
		"no certificates":         {"link", set.Keys["link"], ""},
		"a certificate as key":    {"link", set.Certs, set.Certs},
		"text before the key":     {"link", "junk\n" + set.Keys["link"], set.Certs},
		"two keys":                {"link", set.Keys["link"] + set.Keys["link"], set.Certs},
		"text before a cert":      {"link", set.Keys["link"], "junk\n" + set.Certs},
		"text between certs":      {"link", set.Keys["link"], gwOnly.Certs + "junk\n" + set.Certs},
		"a damaged cert first":    {"link", set.Keys["link"], strings.Replace(set.Certs, "-----\nMI", "-----\n!!", 1)},
		"a cut-off cert":          {"link", set.Keys["link"], set.Certs + gwOnly.Certs[:40]},
		"unknown service":         {"link", set.Keys["link"], set.Certs + mustSet(t, "intruder").Certs},
		"two services, one key":   {"link", set.Keys["link"], withoutQuota(t, set.Certs) + sameKeyCert(t, set.Keys["gateway"])},
	}
	for name, c := range cases {
		if _, err := NewKeys(c[0], c[1], c[2]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func mustSet(t *testing.T, names ...string) KeySet {
	t.Helper()
	set, err := GenerateKeySet(names...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// sameKeyCert is a certificate for a known service, other than the gateway, that carries the
// gateway's public key.
func sameKeyCert(t *testing.T, gatewayKey string) string {
	t.Helper()
	priv, err := ParsePrivateKey(gatewayKey)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "quota"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// withoutQuota is the bundle certs without quota's certificate.
func withoutQuota(t *testing.T, certs string) string {
	t.Helper()
	var out []byte
	rest := []byte(certs)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return string(out)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if c.Subject.CommonName != "quota" {
			out = append(out, pem.EncodeToMemory(b)...)
		}
	}
}

// The User-Agent a token carries is valid UTF-8 of at most MaxUserAgent bytes, cut on a
// character boundary; a gateway token carrying anything else is refused.
func TestUserAgentClipped(t *testing.T) {
	long := strings.Repeat("é", MaxUserAgent) // 2 bytes each
	for in, want := range map[string]string{
		"curl/8":                               "curl/8",
		"bad\xff\xfebytes":                     "bad\uFFFDbytes",
		long:                                   long[:MaxUserAgent],
		"x" + long:                             "x" + long[:MaxUserAgent-2],
		strings.Repeat("\xff", 2*MaxUserAgent): "\uFFFD",
	} {
		got := clipUserAgent(in)
		if got != want || len(got) > MaxUserAgent || !utf8.ValidString(got) {
			t.Errorf("clipUserAgent(%.20q) = %.20q (%d bytes), want %.20q", in, got, len(got), want)
		}
	}
	gw, link := keysOf(t, Gateway), keysOf(t, "link")
	tok, _ := gw.SignCaller(Caller{UserID: "u1", Role: RoleUser, UserAgent: "x" + long}, "link")
	if c, err := link.Verify(tok); err != nil || c.UserAgent != "x"+long[:MaxUserAgent-2] {
		t.Fatalf("Verify = %.30q, %v", c.UserAgent, err)
	}
	priv, _ := ParsePrivateKey(set.Keys[Gateway])
	raw, _ := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"role": "user", "sub": "u1", "iss": Gateway, "aud": "link",
		"ua": strings.Repeat("a", MaxUserAgent+1), "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix()}).SignedString(priv)
	if _, err := link.Verify(raw); err == nil {
		t.Error("a User-Agent over the limit was accepted")
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
		// The gateway's material from the fixture, link's made here.
		linkSet, err := GenerateKeySet("link")
		if err != nil {
			t.Fatal(err)
		}
		bundle := string(cert) + linkSet.Certs
		gw, err := NewKeys(Gateway, string(key), bundle)
		if err != nil {
			t.Fatalf("%s: %v", maker, err)
		}
		link, err := NewKeys("link", linkSet.Keys["link"], bundle)
		if err != nil {
			t.Fatalf("%s: %v", maker, err)
		}
		if _, err := link.Verify(mustSign(t, gw, "link")); err != nil {
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
		if CallerOf(c).Role == RoleService {
			return c.SendString(CallerOf(c).Role + "|" + CallerOf(c).Service + "|")
		}
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
