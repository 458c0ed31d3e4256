// Package export_toolhost_plugin_completions implements contract 0.3's
// `completions` export that the generated bindings (bindings-offers) call,
// on top of the completers registered with package toolhost. Plugin
// authors do not touch it.
package export_toolhost_plugin_completions

import (
	"strings"

	res "wit_component/export_toolhost_plugin_resources"
	"wit_component/toolhost"
	"wit_component/toolhost_plugin_completions"
	types "wit_component/toolhost_plugin_offer_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// Complete lists the values for argument of target that fit value.
func Complete(target toolhost_plugin_completions.Target, argument string, value string,
	context []witTypes.Tuple2[string, string]) witTypes.Result[types.Completion, types.OfferError] {
	template := target.Tag() == toolhost_plugin_completions.Target_Template
	var name string
	if template {
		name = target.Template()
	} else {
		name = target.Prompt()
	}
	values, err := toolhost.Complete(template, strings.Clone(name), strings.Clone(argument), strings.Clone(value),
		res.Arguments(context))
	if err != nil {
		return witTypes.Err[types.Completion](res.OfferError(err))
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strings.ToValidUTF8(v, "\uFFFD")
	}
	return witTypes.Ok[types.Completion, types.OfferError](types.Completion{
		Values: out, Total: witTypes.None[uint32](), HasMore: false,
	})
}
