// Package export_toolhost_plugin_tool implements the `tool` export that the
// generated bindings call, on top of the tools registered with package
// toolhost. Plugin authors do not touch it.
package export_toolhost_plugin_tool

import (
	"strings"

	"wit_component/toolhost"
	"wit_component/toolhost_plugin_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

func optionString(s string) witTypes.Option[string] {
	if s == "" {
		return witTypes.None[string]()
	}
	return witTypes.Some(s)
}

func optionBool(b *bool) witTypes.Option[bool] {
	if b == nil {
		return witTypes.None[bool]()
	}
	return witTypes.Some(*b)
}

// utf8Text is s as the host can take it: UTF-8.
func utf8Text(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// Describe lists the registered tools.
func Describe() []toolhost_plugin_types.ToolInfo {
	infos := toolhost.Tools()
	out := make([]toolhost_plugin_types.ToolInfo, len(infos))
	for i, t := range infos {
		a := t.Annotations
		out[i] = toolhost_plugin_types.ToolInfo{
			Name:         t.Name,
			Description:  utf8Text(t.Description),
			InputSchema:  t.InputSchema,
			OutputSchema: optionString(t.OutputSchema),
			Annotations: toolhost_plugin_types.Annotations{
				Title:       optionString(utf8Text(a.Title)),
				ReadOnly:    optionBool(a.ReadOnly),
				Destructive: optionBool(a.Destructive),
				Idempotent:  optionBool(a.Idempotent),
				OpenWorld:   optionBool(a.OpenWorld),
			},
			Meta: optionString(t.Meta),
		}
	}
	return out
}

func content(c toolhost.Content) toolhost_plugin_types.Content {
	switch c.Kind {
	case toolhost.ContentImage:
		return toolhost_plugin_types.MakeContentImage(toolhost_plugin_types.Media{MediaType: utf8Text(c.MediaType), Data: c.Data})
	case toolhost.ContentAudio:
		return toolhost_plugin_types.MakeContentAudio(toolhost_plugin_types.Media{MediaType: utf8Text(c.MediaType), Data: c.Data})
	case toolhost.ContentResource:
		contents := toolhost_plugin_types.MakeResourceContentsText(utf8Text(c.Text))
		if c.Blob {
			contents = toolhost_plugin_types.MakeResourceContentsBlob(c.Data)
		}
		return toolhost_plugin_types.MakeContentResource(toolhost_plugin_types.EmbeddedResource{
			Uri:       utf8Text(c.URI),
			MediaType: optionString(utf8Text(c.MediaType)),
			Contents:  contents,
		})
	default:
		return toolhost_plugin_types.MakeContentText(utf8Text(c.Text))
	}
}

// Call runs one tool.
func Call(name string, input string) witTypes.Result[toolhost_plugin_types.ToolOutput, toolhost_plugin_types.ToolError] {
	reply, err := toolhost.Call(name, input)
	if err == nil {
		out := toolhost_plugin_types.ToolOutput{Json: witTypes.None[string](), Content: make([]toolhost_plugin_types.Content, len(reply.Content))}
		if reply.JSON != nil {
			out.Json = witTypes.Some(*reply.JSON)
		}
		for i, c := range reply.Content {
			out.Content[i] = content(c)
		}
		return witTypes.Ok[toolhost_plugin_types.ToolOutput, toolhost_plugin_types.ToolError](out)
	}
	e := err.(*toolhost.Error)
	var wit toolhost_plugin_types.ToolError
	message := utf8Text(e.Message)
	switch e.Kind {
	case toolhost.KindInvalidInput:
		wit = toolhost_plugin_types.MakeToolErrorInvalidInput(message)
	case toolhost.KindDenied:
		wit = toolhost_plugin_types.MakeToolErrorDenied(message)
	case toolhost.KindUnknownTool:
		wit = toolhost_plugin_types.MakeToolErrorUnknownTool(message)
	default:
		wit = toolhost_plugin_types.MakeToolErrorFailed(message)
	}
	return witTypes.Err[toolhost_plugin_types.ToolOutput, toolhost_plugin_types.ToolError](wit)
}
