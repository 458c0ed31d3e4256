// Package export_toolhost_plugin_prompts implements contract 0.3's
// `prompts` export that the generated bindings (bindings-offers) call, on
// top of the prompts registered with package toolhost. Plugin authors do
// not touch it.
package export_toolhost_plugin_prompts

import (
	"strings"

	res "wit_component/export_toolhost_plugin_resources"
	"wit_component/toolhost"
	types "wit_component/toolhost_plugin_offer_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// ListPrompts lists the registered prompts.
func ListPrompts() []types.PromptInfo {
	ps := toolhost.Prompts()
	out := make([]types.PromptInfo, len(ps))
	for i, p := range ps {
		args := make([]types.PromptArgument, len(p.Arguments))
		for j, a := range p.Arguments {
			args[j] = types.PromptArgument{Name: a.Name, Description: res.OptionString(a.Description), Required: a.Required}
		}
		out[i] = types.PromptInfo{
			Name:        p.Name,
			Description: res.OptionString(p.Description),
			Arguments:   args,
			Meta:        res.OptionString(p.Meta),
		}
	}
	return out
}

func utf8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// part is a message's content as the contract carries it.
func part(c toolhost.Content) types.Part {
	switch c.Kind {
	case toolhost.ContentImage:
		return types.MakePartImage(types.Media{MediaType: utf8(c.MediaType), Data: c.Data})
	case toolhost.ContentAudio:
		return types.MakePartAudio(types.Media{MediaType: utf8(c.MediaType), Data: c.Data})
	case toolhost.ContentResource:
		return types.MakePartResource(res.Part(toolhost.ReadPart{
			URI: c.URI, MimeType: c.MediaType, Text: c.Text, Data: c.Data, Blob: c.Blob,
		}))
	default:
		return types.MakePartText(utf8(c.Text))
	}
}

// Get renders the prompt name with arguments.
func Get(name string, arguments []witTypes.Tuple2[string, string]) witTypes.Result[types.PromptReply, types.OfferError] {
	messages, err := toolhost.GetPrompt(strings.Clone(name), res.Arguments(arguments))
	if err != nil {
		return witTypes.Err[types.PromptReply](res.OfferError(err))
	}
	reply := types.PromptReply{Description: witTypes.None[string](), Messages: make([]types.Message, len(messages))}
	for i, m := range messages {
		role := types.Role_User
		if m.Role == toolhost.Assistant {
			role = types.Role_Assistant
		}
		reply.Messages[i] = types.Message{Role: role, Content: part(m.Content)}
	}
	return witTypes.Ok[types.PromptReply, types.OfferError](reply)
}
