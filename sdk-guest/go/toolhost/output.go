package toolhost

import "reflect"

// ContentKind says what a content part is.
type ContentKind uint8

const (
	// ContentText is a text part.
	ContentText ContentKind = iota
	// ContentImage is an image: bytes and a media type.
	ContentImage
	// ContentAudio is audio: bytes and a media type.
	ContentAudio
	// ContentResource is an embedded resource: a URI and its contents.
	ContentResource
)

// Content is one part of a result besides its structured value: what an
// MCP client shows a person, and what a model that reads images sees. Make
// one with Text, Image, PNG, Audio, ResourceText or ResourceBlob.
type Content struct {
	Kind ContentKind
	// Text: a text part's text, or a text resource's contents.
	Text string
	// Data: an image's or audio's bytes, or a binary resource's contents.
	Data []byte
	// MediaType: required for an image or audio; optional for a resource.
	MediaType string
	// URI: a resource's URI.
	URI string
	// Blob: the resource holds Data, not Text.
	Blob bool
}

// Text is a text part.
func Text(text string) Content { return Content{Kind: ContentText, Text: text} }

// Image is an image part: its media type (image/png, image/jpeg, ...) and bytes.
func Image(mediaType string, data []byte) Content {
	return Content{Kind: ContentImage, MediaType: mediaType, Data: data}
}

// PNG is a PNG image part.
func PNG(data []byte) Content { return Image("image/png", data) }

// Audio is an audio part: its media type (audio/wav, audio/mpeg, ...) and bytes.
func Audio(mediaType string, data []byte) Content {
	return Content{Kind: ContentAudio, MediaType: mediaType, Data: data}
}

// ResourceText is an embedded resource holding text; mediaType may be "".
func ResourceText(uri, mediaType, text string) Content {
	return Content{Kind: ContentResource, URI: uri, MediaType: mediaType, Text: text}
}

// ResourceBlob is an embedded resource holding bytes; mediaType may be "".
func ResourceBlob(uri, mediaType string, data []byte) Content {
	return Content{Kind: ContentResource, URI: uri, MediaType: mediaType, Data: data, Blob: true}
}

// Output is a result with content parts: a structured value (what the
// tool's output schema describes) and Content, shown in order. A tool
// function that returns Output[T] gets its output schema from T.
//
//	func plot(in plotInput) (toolhost.Output[summary], error) {
//		png := draw(in)
//		return toolhost.Output[summary]{Value: summary{Points: len(in.Values)},
//			Content: []toolhost.Content{toolhost.PNG(png)}}, nil
//	}
type Output[T any] struct {
	Value   T
	Content []Content
}

// NoValue is the structured value of an Output that has none: an
// Output[NoValue] is content parts only, and declares no output schema.
type NoValue struct{}

// ContentOnly is a result of content parts only, with no structured value.
func ContentOnly(parts ...Content) Output[NoValue] {
	return Output[NoValue]{Content: parts}
}

// withContent is what Output[T] shows the SDK: its value (nil for none)
// and its content.
type withContent interface {
	parts() (value any, content []Content)
	valueType() reflect.Type
}

func (o Output[T]) parts() (any, []Content) {
	if _, none := any(o.Value).(NoValue); none {
		return nil, o.Content
	}
	return o.Value, o.Content
}

func (Output[T]) valueType() reflect.Type { return reflect.TypeFor[T]() }
