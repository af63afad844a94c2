// Package qr draws the QR code of a short URL as SVG or PNG (error correction M), with
// github.com/yeqown/go-qrcode/v2 doing the encoding and this package only the drawing: the
// library's own image writer lives in a module of its own and draws no SVG.
package qr

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// Limits of the drawing, as the contract fixes them.
const (
	MinSize       = 128
	MaxSize       = 1024
	DefaultSize   = 256
	MaxMargin     = 16
	DefaultMargin = 4
)

// Formats.
const (
	SVG = "svg"
	PNG = "png"
)

// ContentType is the media type of format.
func ContentType(format string) string {
	if format == SVG {
		return "image/svg+xml"
	}
	return "image/png"
}

// modules returns the dark modules of text's symbol, row by row.
func modules(text string) ([][]bool, error) {
	code, err := qrcode.NewWith(text, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("encode qr code: %w", err)
	}
	var c capture
	if err := code.Save(&c); err != nil {
		return nil, fmt.Errorf("encode qr code: %w", err)
	}
	return c.bits, nil
}

// capture is a qrcode.Writer that keeps the symbol's modules.
type capture struct{ bits [][]bool }

func (c *capture) Write(m qrcode.Matrix) error { c.bits = m.Bitmap(); return nil }
func (c *capture) Close() error                { return nil }

// Draw returns text's QR code in format, size pixels square, with a quiet zone of margin
// modules around the symbol (more when size does not divide evenly: modules stay whole
// pixels, so scanners read them cleanly).
func Draw(text, format string, size, margin int) ([]byte, error) {
	bits, err := modules(text)
	if err != nil {
		return nil, err
	}
	if format == SVG {
		return drawSVG(bits, size, margin), nil
	}
	return drawPNG(bits, size, margin)
}

// drawSVG draws one path of unit squares in a viewBox measured in modules.
func drawSVG(bits [][]bool, size, margin int) []byte {
	n := len(bits) + 2*margin
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, size, size, n, n)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bits {
		for x, dark := range row {
			if dark {
				b.WriteString("M" + strconv.Itoa(x+margin) + " " + strconv.Itoa(y+margin) + "h1v1h-1z")
			}
		}
	}
	b.WriteString(`"/></svg>` + "\n")
	return b.Bytes()
}

// drawPNG draws whole-pixel modules centred in a size × size grey image.
func drawPNG(bits [][]bool, size, margin int) ([]byte, error) {
	n := len(bits) + 2*margin
	scale := max(size/n, 1)
	img := image.NewGray(image.Rect(0, 0, size, size))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	offset := (size - scale*len(bits)) / 2
	for y, row := range bits {
		for x, dark := range row {
			if !dark {
				continue
			}
			for dy := range scale {
				for dx := range scale {
					img.SetGray(offset+x*scale+dx, offset+y*scale+dy, color.Gray{})
				}
			}
		}
	}
	var b bytes.Buffer
	// The fastest compression: an anonymous route, so each image must cost little to draw
	// (two colours compress well at any level).
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return b.Bytes(), nil
}
