package ratelimit

import (
	"io"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/gofiber/fiber/v2"
)

func TestSetWritesBothFieldsAsLists(t *testing.T) {
	app := fiber.New()
	app.Get("/", func(c *fiber.Ctx) error {
		Set(c, Window{Name: "token", Limit: 600, WindowSeconds: 60, Remaining: 599, ResetSeconds: 60})
		Set(c, Window{Name: "create", Limit: 100, WindowSeconds: 2592000, Remaining: 0, ResetSeconds: 17})
		return c.SendString("ok")
	})
	resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if got, want := resp.Header.Get(HeaderPolicy), `"token";q=600;w=60, "create";q=100;w=2592000`; got != want {
		t.Errorf("policy %q, want %q", got, want)
	}
	if got, want := resp.Header.Get(HeaderState), `"token";r=599;t=60, "create";r=0;t=17`; got != want {
		t.Errorf("state %q, want %q", got, want)
	}
}

func TestParseReadsWhatSetWrites(t *testing.T) {
	ws := []Window{{Name: "create", Limit: 10, WindowSeconds: 86400, Remaining: 3, ResetSeconds: 5000},
		{Name: "token", Limit: 600, WindowSeconds: 60, Remaining: 0, ResetSeconds: 1}}
	var policy, state string
	for i, w := range ws {
		if i > 0 {
			policy, state = policy+", ", state+", "
		}
		policy, state = policy+w.Policy(), state+w.State()
	}
	if got := Parse(policy, state); !reflect.DeepEqual(got, ws) {
		t.Fatalf("Parse = %+v, want %+v", got, ws)
	}
}

func TestParseSkipsWhatItCannotRead(t *testing.T) {
	got := Parse(`garbage, "a";q=x;w=1, "b";q=5;w=60`, `"b";r=2;t=3, "c";r=1;t=1, nonsense`)
	want := []Window{{Name: "b", Limit: 5, WindowSeconds: 60, Remaining: 2, ResetSeconds: 3}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse = %+v, want %+v", got, want)
	}
	if got := Parse("", ""); got != nil {
		t.Fatalf("Parse of nothing = %+v", got)
	}
}
