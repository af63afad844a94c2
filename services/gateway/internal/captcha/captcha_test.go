package captcha

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

func TestVerify(t *testing.T) {
	var gotSecret string
	var gotIP bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		gotSecret, gotIP = r.PostForm.Get("secret"), r.PostForm.Has("remoteip")
		switch r.PostForm.Get("response") {
		case "good":
			_, _ = w.Write([]byte(`{"success":true}`))
		case "broken":
			w.WriteHeader(http.StatusBadGateway)
		default:
			_, _ = w.Write([]byte(`{"success":false,"error-codes":["invalid-input-response"]}`))
		}
	}))
	defer srv.Close()
	v := New(srv.URL, "s3cret", http.DefaultTransport)
	str := func(s string) *string { return &s }
	ctx := context.Background()

	if err := v.Verify(ctx, str("good")); err != nil {
		t.Fatalf("good token: %v", err)
	}
	if gotSecret != "s3cret" || gotIP {
		t.Fatalf("form sent: secret %q, remote ip sent: %v", gotSecret, gotIP)
	}
	for name, tok := range map[string]*string{"missing": nil, "empty": str(""), "rejected": str("bad")} {
		if err := v.Verify(ctx, tok); !errors.Is(err, ErrFailed) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if err := v.Verify(ctx, str("broken")); !errs.IsKind(err, errs.KindUnavailable) {
		t.Errorf("provider failure: got %v", err)
	}
	var none *Verifier
	if err := none.Verify(ctx, nil); err != nil {
		t.Errorf("unconfigured verifier must accept: %v", err)
	}
}
