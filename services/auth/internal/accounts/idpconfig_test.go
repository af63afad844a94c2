package accounts_test

import (
	"context"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
)

// The public configuration names where browsers sign in: the setting, else Google's for
// Google's issuer, else nothing; and nothing at all while no provider is configured.
func TestIDPConfigNamesTheAuthorizationEndpoint(t *testing.T) {
	for _, c := range []struct {
		issuer, setting, want string
	}{
		{"https://accounts.google.com", "", "https://accounts.google.com/o/oauth2/v2/auth"},
		{"https://accounts.google.com/", "", "https://accounts.google.com/o/oauth2/v2/auth"},
		{"https://accounts.google.com", "https://sso.example/authorize", "https://sso.example/authorize"},
		{"https://login.example", "", ""},
		{"https://login.example", "https://login.example/oauth2/authorize", "https://login.example/oauth2/authorize"},
	} {
		svc, err := accounts.New(context.Background(), accounts.Options{Store: newMemStore(), Hasher: plainHasher{},
			Audit: &fakeAudit{}, Links: newFakeLinks(), SessionTTL: time.Hour, Mail: noMail{},
			IDP: idp.New(idp.Config{Issuer: c.issuer, ClientID: "client"}), Issuer: c.issuer, ClientID: "client", AuthorizationURL: c.setting})
		if err != nil {
			t.Fatal(err)
		}
		want := auth.IDPConfig{Enabled: true, Provider: auth.ProviderGoogle, ClientID: "client", Issuer: c.issuer, AuthorizationEndpoint: c.want}
		if got := svc.IDPConfig(); got != want {
			t.Errorf("issuer %q, setting %q: IDPConfig = %+v, want %+v", c.issuer, c.setting, got, want)
		}
	}
	svc, err := accounts.New(context.Background(), accounts.Options{Store: newMemStore(), Hasher: plainHasher{},
		Audit: &fakeAudit{}, Links: newFakeLinks(), SessionTTL: time.Hour, Mail: noMail{}, IDP: idp.New(idp.Config{}), AuthorizationURL: "https://sso.example/authorize"})
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.IDPConfig(); got != (auth.IDPConfig{Provider: auth.ProviderGoogle}) {
		t.Fatalf("without a provider: %+v", got)
	}
}
