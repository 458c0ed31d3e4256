// Package export_toolhost_plugin_tool implements the `tool` export that the
// generated bindings call, on top of the tools registered with package
// toolhost. Plugin authors do not touch it.
package export_toolhost_plugin_tool

import (
	"wit_component/toolhost"
	"wit_component/toolhost_plugin_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// Describe lists the registered tools.
func Describe() []toolhost_plugin_types.ToolInfo {
	infos := toolhost.Tools()
	out := make([]toolhost_plugin_types.ToolInfo, len(infos))
	for i, t := range infos {
		out[i] = toolhost_plugin_types.ToolInfo{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out
}

// Call runs one tool.
func Call(name string, input string) witTypes.Result[string, toolhost_plugin_types.ToolError] {
	output, err := toolhost.Call(name, input)
	if err == nil {
		return witTypes.Ok[string, toolhost_plugin_types.ToolError](output)
	}
	e := err.(*toolhost.Error)
	var wit toolhost_plugin_types.ToolError
	switch e.Kind {
	case toolhost.KindInvalidInput:
		wit = toolhost_plugin_types.MakeToolErrorInvalidInput(e.Message)
	case toolhost.KindDenied:
		wit = toolhost_plugin_types.MakeToolErrorDenied(e.Message)
	case toolhost.KindUnknownTool:
		wit = toolhost_plugin_types.MakeToolErrorUnknownTool(e.Message)
	default:
		wit = toolhost_plugin_types.MakeToolErrorFailed(e.Message)
	}
	return witTypes.Err[string, toolhost_plugin_types.ToolError](wit)
}
