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

func init() {
	toolhost.Register("{{name}}_greet", "Greet someone by name.",
		func(in greetInput) (greeting, error) {
			name := strings.TrimSpace(in.Name)
			if name == "" {
				return greeting{}, toolhost.InvalidInput("`name` must not be blank")
			}
			toolhost.Progress(0, 1, "looking up the greeting")
			word, ok := toolhost.Config("greeting")
			if !ok {
				word = "Hello"
			}
			toolhost.Progress(1, 1, "greeted")
			return greeting{Greeting: fmt.Sprintf("%s, %s!", word, name)}, nil
		}, toolhost.Title("Greet"), toolhost.ReadOnly(true))
}
