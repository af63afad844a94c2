package server

import (
	"testing"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

type sample struct {
	URL  string `json:"url"`
	Days *int   `json:"expiration_days"`
	Flag bool   `json:"flag"`
}

func TestDecodeBody(t *testing.T) {
	cases := []struct {
		body, wantErr string
	}{
		{`{"url":"x","expiration_days":3,"unknown":[1,2]}`, ""},
		{``, "request body is required"},
		{`   `, "request body is required"},
		{`{"url":`, "request body is not valid JSON"},
		{`not json`, "request body is not valid JSON"},
		{`{"url":"x"} {"url":"y"}`, "request body must be a single JSON object"},
		{`[1,2]`, "request body must be a JSON object"},
		{`"str"`, "request body must be a JSON object"},
		{`{"url":5}`, "url must be a string"},
		{`{"expiration_days":"7"}`, "expiration_days must be an integer"},
		{`{"expiration_days":1.5}`, "expiration_days must be an integer"},
		{`{"expiration_days":99999999999999999999}`, "expiration_days must be an integer"},
		{`{"flag":"yes"}`, "flag must be a boolean"},
	}
	for _, tc := range cases {
		var v sample
		err := decodeBody([]byte(tc.body), &v)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%q: unexpected error %v", tc.body, err)
			}
			continue
		}
		e, ok := errs.As(err)
		if !ok || e.Kind != errs.KindInvalid || e.Message != tc.wantErr {
			t.Errorf("%q: got %v, want 400 %q", tc.body, err, tc.wantErr)
		}
	}
}

func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte(`{"url":"http://a.b","expiration_days":3}`))
	f.Add([]byte(`{"expiration_days":1e309}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var v sample
		if err := decodeBody(body, &v); err != nil {
			if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Message == "" {
				t.Fatalf("decode failure is not a 400 with a message: %v", err)
			}
		}
	})
}
