// Package plugin is {{name}}: a toolhost plugin in Go; greets someone by name.
//
// Build with ./build.sh, then
// toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist
//
// Every tool is a typed function registered in init(); the JSON Schema the
// model sees is derived from the input struct's fields and tags. build.sh
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
		func(in greetInput) (any, error) {
			name := strings.TrimSpace(in.Name)
			if name == "" {
				return nil, toolhost.InvalidInput("`name` must not be blank")
			}
			word, ok := toolhost.Config("greeting")
			if !ok {
				word = "Hello"
			}
			return greeting{Greeting: fmt.Sprintf("%s, %s!", word, name)}, nil
		})
}
