package idp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
)

// MaxDocumentSize bounds what is read of a discovery document or a key set: real ones are a
// few kilobytes.
const MaxDocumentSize = 1 << 20

// boundedTransport reads the provider's whole answer inside the round trip, so within the
// client's timeout, and at most max bytes of it: go-oidc reads every body whole with
// io.ReadAll. Anything but a 200 (which go-oidc refuses anyway) and an answer over max are
// round-trip errors, which the client reports as *url.Error like any other failed
// download; that is how keySet tells a download that failed from a bad token.
type boundedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := httpclient.ReadBounded(resp, t.max, "identity provider answer")
	if err != nil {
		return nil, err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return resp, nil
}

// keysFailure is the context key under which Verify passes keySet where to note a failed
// download of the keys.
type keysFailure struct{}

// keySet is the provider's remote key set. A download of the keys that failed is noted for
// Verify: IDTokenVerifier reports every failure of the key set as a bad signature, in text,
// and the caller of a token we could not check must hear "unavailable", not "invalid".
type keySet struct{ remote *oidc.RemoteKeySet }

func (k keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.remote.VerifySignature(ctx, jwt)
	var download *url.Error
	if errors.As(err, &download) {
		if note, ok := ctx.Value(keysFailure{}).(*error); ok {
			*note = download
		}
	}
	return payload, err
}

// newVerifier builds the token verifier over the keys at jwksURL, downloaded with the
// client keyCtx carries. algs are the signing algorithms the provider announces; those
// go-oidc supports are allowed (all of them, as Provider.Verifier does), RS256 when none is.
func newVerifier(keyCtx context.Context, issuer, jwksURL string, algs []string, conf oidc.Config) *oidc.IDTokenVerifier {
	for _, a := range algs {
		if supportedAlg(a) {
			conf.SupportedSigningAlgs = append(conf.SupportedSigningAlgs, a)
		}
	}
	return oidc.NewVerifier(issuer, keySet{oidc.NewRemoteKeySet(keyCtx, jwksURL)}, &conf)
}

// supportedAlg reports whether go-oidc verifies signatures of algorithm a.
func supportedAlg(a string) bool {
	switch a {
	case oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
		oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA:
		return true
	}
	return false
}
