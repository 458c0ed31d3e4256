// Package plugin is {{name}}: a toolhost plugin in Go; greets someone by name.
//
// Build with ./build.sh, then
// toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist
//
// Every tool is a typed function registered in init(); the JSON Schema the
// model sees is derived from the input struct's fields and tags, and the
// output schema (which the host checks every result against) from the
// result struct's. toolhost.Progress tells whoever waits how far a call is;
// returning a toolhost.Output adds content parts (an image, ...). build.sh
// assembles this package with the toolhost Go SDK (wit_component/toolhost,
// from the toolhost checkout's sdk-guest/go) into one module.
//
// Besides its tool the plugin offers (contract 0.3) a resource
// SCHEME://about, a resource template SCHEME://greeting/{name}, a prompt
// {{name}}_welcome and completions of that prompt's `name`, where SCHEME
// is the plugin's name with `_` as `-` (the URI scheme the host gives the
// plugin). toolhost.RegisterResource, RegisterTemplate, RegisterPrompt and
// CompletePrompt declare them in init(); build.sh builds with the SDK's
// 0.3 bindings when a Go file here calls RegisterResource, RegisterTemplate
// or RegisterPrompt. Without them the plugin is a 0.2 plugin, tools only.
package plugin

import (
	"fmt"
	"strings"

	"wit_component/toolhost"
)

type greetInput struct {
	Name string `json:"name" description:"Who to greet."`
}

type greeting struct {
	Greeting string `json:"greeting"`
}

// greetingFor is "<greeting>, <name>!" with the manifest's [config]
// greeting, or Hello.
func greetingFor(name string) string {
	word, ok := toolhost.Config("greeting")
	if !ok {
		word = "Hello"
	}
	return fmt.Sprintf("%s, %s!", word, name)
}

// The URI scheme the host gives this plugin's resources: its name, `_` as `-`.
var scheme = strings.ReplaceAll("{{name}}", "_", "-")

// The names {{name}}_welcome's `name` completes from.
var names = []string{"Ada", "Alan", "Grace"}

func init() {
	toolhost.Register("{{name}}_greet", "Greet someone by name.",
		func(in greetInput) (greeting, error) {
			name := strings.TrimSpace(in.Name)
			if name == "" {
				return greeting{}, toolhost.InvalidInput("`name` must not be blank")
			}
			toolhost.Progress(0, 1, "looking up the greeting")
			text := greetingFor(name)
			toolhost.Progress(1, 1, "greeted")
			return greeting{Greeting: text}, nil
		}, toolhost.Title("Greet"), toolhost.ReadOnly(true))

	// SCHEME://about: a Markdown page about the plugin.
	toolhost.RegisterResource(toolhost.Resource{
		URI: scheme + "://about", Name: "about", Description: "What this plugin does.",
		MimeType: "text/markdown",
		Read: func(uri string, _ map[string]string) ([]toolhost.Content, error) {
			return []toolhost.Content{toolhost.ResourceText(uri, "text/markdown",
				"# {{name}}\n\nA toolhost plugin in Go: the tool `{{name}}_greet` greets someone by name, and "+
					scheme+"://greeting/NAME reads a greeting.\n")}, nil
		},
	})

	// SCHEME://greeting/{name}: the greeting the tool would give name.
	toolhost.RegisterTemplate(toolhost.Resource{
		URI: scheme + "://greeting/{name}", Name: "greeting", Description: "The greeting for someone.",
		MimeType: "text/plain",
		Read: func(uri string, vars map[string]string) ([]toolhost.Content, error) {
			return []toolhost.Content{toolhost.ResourceText(uri, "text/plain", greetingFor(vars["name"]))}, nil
		},
	})

	// {{name}}_welcome: one user message asking to welcome `name` (required:
	// the SDK refuses a call without it before Get runs).
	toolhost.RegisterPrompt(toolhost.Prompt{
		Name: "{{name}}_welcome", Description: "Welcome someone to the team.",
		Arguments: []toolhost.PromptArg{
			{Name: "name", Description: "Who to welcome.", Required: true},
		},
		Get: func(args map[string]string) ([]toolhost.Message, error) {
			text := fmt.Sprintf("Please welcome %s to the team, warmly and in one sentence.", args["name"])
			return []toolhost.Message{toolhost.UserMessage(toolhost.Text(text))}, nil
		},
	})

	// Names for {{name}}_welcome's `name` that start with what was typed.
	toolhost.CompletePrompt("{{name}}_welcome", "name", func(value string, _ map[string]string) ([]string, error) {
		var fit []string
		for _, n := range names {
			if strings.HasPrefix(n, value) {
				fit = append(fit, n)
			}
		}
		return fit, nil
	})
}
