// Package plugin is go_mandelbrot: renders a view of the Mandelbrot set as
// a PNG. Built by plugins/go/build.sh, on toolhost:plugin@0.2.0: the image
// is a content part beside a summary whose output schema comes from its Go
// type, progress is reported row by row (a large render is a long job), and
// a render past the work budget asks the user for a go-ahead first.
package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"

	"wit_component/toolhost"
)

type renderInput struct {
	Width         *int     `json:"width" description:"Image width in pixels, 16 to 1024 (default 256)."`
	Height        *int     `json:"height" description:"Image height in pixels, 16 to 1024 (default 256)."`
	CenterX       *float64 `json:"center_x" description:"Real part of the point at the image's centre (default -0.5)."`
	CenterY       *float64 `json:"center_y" description:"Imaginary part of the point at the image's centre (default 0)."`
	Zoom          *float64 `json:"zoom" description:"Magnification, at least 1; 1 shows the whole set (default 1)."`
	MaxIterations *int     `json:"max_iterations" description:"Iterations before a point counts as inside the set, 16 to 5000 (default 128)."`
}

type summary struct {
	Width         int     `json:"width"`
	Height        int     `json:"height"`
	MaxIterations int     `json:"max_iterations"`
	Inside        float64 `json:"inside" description:"Fraction of the pixels inside the set."`
	Bytes         int     `json:"bytes" description:"Size of the PNG."`
}

type goAhead struct {
	GoAhead bool `json:"go_ahead" description:"Render it anyway."`
}

// workBudget is the most width x height x max_iterations rendered without
// asking: about a second of fuel.
const workBudget = 16_000_000

func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func render(in renderInput) (toolhost.Output[summary], error) {
	var none toolhost.Output[summary]
	w, h := orDefault(in.Width, 256), orDefault(in.Height, 256)
	iterations := orDefault(in.MaxIterations, 128)
	cx, cy, zoom := orDefault(in.CenterX, -0.5), orDefault(in.CenterY, 0), orDefault(in.Zoom, 1)
	switch {
	case w < 16 || w > 1024 || h < 16 || h > 1024:
		return none, toolhost.InvalidInput("width and height must be 16 to 1024, not %d x %d", w, h)
	case iterations < 16 || iterations > 5000:
		return none, toolhost.InvalidInput("max_iterations must be 16 to 5000, not %d", iterations)
	case !(zoom >= 1):
		return none, toolhost.InvalidInput("zoom must be at least 1")
	}
	if work := w * h * iterations; work > workBudget {
		question := fmt.Sprintf("Render a %d x %d view at %d iterations? That is up to %d M steps; it takes a while.",
			w, h, iterations, work/1_000_000)
		answer, err := toolhost.Ask[goAhead](question)
		var askErr *toolhost.AskError
		if errors.As(err, &askErr) && askErr.Kind == toolhost.AskUnavailable {
			return none, toolhost.InvalidInput("a render of %d x %d at %d iterations needs the user's go-ahead, "+
				"and no one can be asked here (%s): keep width x height x max_iterations within %d",
				w, h, iterations, askErr.Message, workBudget)
		} else if err != nil {
			return none, toolhost.Failed("could not ask the user for a go-ahead: %v", err)
		}
		if answer.Action != toolhost.Accept || !answer.Value.GoAhead {
			return none, toolhost.Failed("the user did not want a render this large")
		}
	}

	img := image.NewGray(image.Rect(0, 0, w, h))
	scale := 3.0 / zoom / float64(min(w, h))
	inside := 0
	for y := 0; y < h; y++ {
		ci := cy + (float64(y)-float64(h)/2)*scale
		for x := 0; x < w; x++ {
			cr := cx + (float64(x)-float64(w)/2)*scale
			zr, zi, n := 0.0, 0.0, 0
			for ; n < iterations && zr*zr+zi*zi <= 4; n++ {
				zr, zi = zr*zr-zi*zi+cr, 2*zr*zi+ci
			}
			shade := uint8(0)
			if n < iterations {
				shade = uint8(255 - 255*n/iterations)
			} else {
				inside++
			}
			img.SetGray(x, y, color.Gray{Y: shade})
		}
		toolhost.Progress(float64(y+1), float64(h), fmt.Sprintf("row %d of %d", y+1, h))
	}
	var encoded bytes.Buffer
	if err := png.Encode(&encoded, img); err != nil {
		return none, toolhost.Failed("could not encode the PNG: %v", err)
	}
	return toolhost.Output[summary]{
		Value: summary{
			Width:         w,
			Height:        h,
			MaxIterations: iterations,
			Inside:        float64(inside) / float64(w*h),
			Bytes:         encoded.Len(),
		},
		Content: []toolhost.Content{toolhost.PNG(encoded.Bytes())},
	}, nil
}

func init() {
	toolhost.Register("go_mandelbrot",
		"Render a view of the Mandelbrot set as a grayscale PNG (centre, zoom, size, iterations); "+
			"answers the image and a summary.",
		render,
		toolhost.Title("Render the Mandelbrot set"), toolhost.ReadOnly(true), toolhost.Idempotent(true),
		toolhost.OpenWorld(false))
}
