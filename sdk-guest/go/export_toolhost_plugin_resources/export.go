// Package export_toolhost_plugin_resources implements contract 0.3's
// `resources` export that the generated bindings (bindings-offers) call, on
// top of the resources and templates registered with package toolhost.
// Plugin authors do not touch it; it is built only into a plugin that
// offers something (build.sh).
package export_toolhost_plugin_resources

import (
	"strings"

	"wit_component/toolhost"
	types "wit_component/toolhost_plugin_offer_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// OptionString is s as an option: none when empty.
func OptionString(s string) witTypes.Option[string] {
	if s == "" {
		return witTypes.None[string]()
	}
	return witTypes.Some(strings.ToValidUTF8(s, "\uFFFD"))
}

func info(r toolhost.Resource) types.ResourceInfo {
	return types.ResourceInfo{
		Uri:         r.URI,
		Name:        r.Name,
		Description: OptionString(r.Description),
		MimeType:    OptionString(r.MimeType),
		Meta:        OptionString(r.Meta),
	}
}

// ListResources lists the registered resources.
func ListResources() []types.ResourceInfo {
	rs := toolhost.Resources()
	out := make([]types.ResourceInfo, len(rs))
	for i, r := range rs {
		out[i] = info(r)
	}
	return out
}

// ListTemplates lists the registered templates.
func ListTemplates() []types.TemplateInfo {
	ts := toolhost.Templates()
	out := make([]types.TemplateInfo, len(ts))
	for i, t := range ts {
		out[i] = types.TemplateInfo(info(t))
	}
	return out
}

// Arguments is the contract's list of names and values as a map.
func Arguments(list []witTypes.Tuple2[string, string]) map[string]string {
	m := make(map[string]string, len(list))
	for _, kv := range list {
		// Copies: the bindings' strings point into memory freed after the call.
		m[strings.Clone(kv.F0)] = strings.Clone(kv.F1)
	}
	return m
}

// OfferError is err (an *toolhost.Error) as the contract's error.
func OfferError(err error) types.OfferError {
	e, ok := err.(*toolhost.Error)
	if !ok {
		e = &toolhost.Error{Kind: toolhost.KindFailed, Message: err.Error()}
	}
	message := strings.ToValidUTF8(e.Message, "\uFFFD")
	switch e.Kind {
	case toolhost.KindNotFound, toolhost.KindUnknownTool:
		return types.MakeOfferErrorNotFound(message)
	case toolhost.KindInvalidInput:
		return types.MakeOfferErrorInvalidInput(message)
	case toolhost.KindDenied:
		return types.MakeOfferErrorDenied(message)
	default:
		return types.MakeOfferErrorFailed(message)
	}
}

// Part is one part of a read as the contract carries it.
func Part(p toolhost.ReadPart) types.ResourcePart {
	contents := types.MakeContentsText(strings.ToValidUTF8(p.Text, "\uFFFD"))
	if p.Blob {
		contents = types.MakeContentsBlob(p.Data)
	}
	return types.ResourcePart{Uri: p.URI, MimeType: OptionString(p.MimeType), Contents: contents}
}

// Read reads uri (a registered resource, or one a template matches, with
// its variables).
func Read(uri string, vars []witTypes.Tuple2[string, string]) witTypes.Result[[]types.ResourcePart, types.OfferError] {
	parts, err := toolhost.Read(strings.Clone(uri), Arguments(vars))
	if err != nil {
		return witTypes.Err[[]types.ResourcePart](OfferError(err))
	}
	out := make([]types.ResourcePart, len(parts))
	for i, p := range parts {
		out[i] = Part(p)
	}
	return witTypes.Ok[[]types.ResourcePart, types.OfferError](out)
}
