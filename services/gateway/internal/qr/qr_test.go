package qr

import (
	"bytes"
	"image"
	"image/png"
	"regexp"
	"strconv"
	"testing"

	"github.com/makiuchi-d/gozxing"
	zxingqr "github.com/makiuchi-d/gozxing/qrcode"
)

// decode reads the QR code in a PNG with an independent decoder (ZXing's port).
func decode(t *testing.T, b []byte) (string, image.Image) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := zxingqr.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return res.GetText(), img
}

func TestPNGDecodesToTheText(t *testing.T) {
	for _, tc := range []struct {
		text         string
		size, margin int
	}{
		{"http://localhost:8080/abc1234", 256, 4},
		{"https://lnk.example/a-custom_code-of-32-characters-xx", 128, 0},
		{"https://lnk.example/Zz9", 1024, 16},
		{"https://lnk.example/Zz9", 333, 1},
	} {
		b, err := Draw(tc.text, PNG, tc.size, tc.margin)
		if err != nil {
			t.Fatal(err)
		}
		got, img := decode(t, b)
		if got != tc.text {
			t.Errorf("decoded %q, want %q", got, tc.text)
		}
		if r := img.Bounds(); r.Dx() != tc.size || r.Dy() != tc.size {
			t.Errorf("%d px asked, %v drawn", tc.size, r)
		}
	}
}

var square = regexp.MustCompile(`M(\d+) (\d+)h1v1h-1z`)

// The SVG draws the same modules as the PNG, in a viewBox of the symbol and its margin.
func TestSVGDrawsTheSameModules(t *testing.T) {
	const text, margin = "https://lnk.example/abc1234", 3
	svg, err := Draw(text, SVG, 300, margin)
	if err != nil {
		t.Fatal(err)
	}
	bits, err := modules(text)
	if err != nil {
		t.Fatal(err)
	}
	n := len(bits) + 2*margin
	if !bytes.Contains(svg, []byte(`width="300" height="300" viewBox="0 0 `+strconv.Itoa(n)+" "+strconv.Itoa(n)+`"`)) {
		t.Fatalf("svg header: %.200s", svg)
	}
	dark := 0
	for _, m := range square.FindAllSubmatch(svg, -1) {
		x, _ := strconv.Atoi(string(m[1]))
		y, _ := strconv.Atoi(string(m[2]))
		if !bits[y-margin][x-margin] {
			t.Fatalf("module %d,%d is light in the symbol", x, y)
		}
		dark++
	}
	want := 0
	for _, row := range bits {
		for _, d := range row {
			if d {
				want++
			}
		}
	}
	if dark != want || dark == 0 {
		t.Fatalf("%d dark squares drawn, the symbol has %d", dark, want)
	}
	// And the symbol itself reads back as the text.
	b, err := Draw(text, PNG, 256, margin)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := decode(t, b); got != text {
		t.Fatalf("decoded %q", got)
	}
}
