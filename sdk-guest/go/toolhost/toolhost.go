// Package toolhost lets a Go plugin declare toolhost tools as typed
// functions. The input type is a struct; its JSON Schema is derived from the
// struct's fields and tags, and the host validates every input against it
// before the function runs. A struct result type gives the tool an output
// schema the same way, which the host checks every result against.
//
//	type GreetInput struct {
//		Name  string `json:"name" description:"Who to greet."`
//		Style string `json:"style,omitempty" enum:"short,long"`
//	}
//
//	type Greeting struct {
//		Greeting string `json:"greeting"`
//	}
//
//	func init() {
//		toolhost.Register("go_greet", "Greet someone.", func(in GreetInput) (Greeting, error) {
//			if in.Name == "" {
//				return Greeting{}, toolhost.InvalidInput("name must not be empty")
//			}
//			toolhost.Progress(1, 1, "greeted")
//			return Greeting{"Hello, " + in.Name}, nil
//		}, toolhost.Title("Greet"), toolhost.ReadOnly(true))
//	}
//
// Return an error made with InvalidInput, Failed or Denied for a structured
// tool error; any other error becomes `failed` with its message. A panic
// ends the call with kind `trap`, as a Rust plugin's panic does, its message
// and FILE:LINE in the error. Return an Output to add content parts (an
// image, audio, text, an embedded resource); report progress with Progress
// and ask the user a question with Ask.
//
// The SDK speaks toolhost:plugin@0.2.0 (wit/0.2/plugin.wit). A plugin can
// also offer resources, templates, prompts and completions (contract 0.3,
// wit/0.3/plugin.wit): RegisterResource, RegisterTemplate, RegisterPrompt,
// CompletePrompt and CompleteTemplate (offers.go).
package toolhost

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// Kind is the kind of a tool error.
type Kind uint8

const (
	// KindInvalidInput: the input matches the schema but makes no sense.
	KindInvalidInput Kind = iota
	// KindFailed: the tool ran and could not do its job.
	KindFailed
	// KindDenied: the sandbox refused something the tool needed.
	KindDenied
	// KindUnknownTool: no tool by that name.
	KindUnknownTool
)

// Error is a tool error with a kind the model sees.
type Error struct {
	Kind    Kind
	Message string
}

func (e *Error) Error() string { return e.Message }

// InvalidInput reports values that make no sense; the model should fix its arguments.
func InvalidInput(format string, args ...any) error {
	return &Error{KindInvalidInput, fmt.Sprintf(format, args...)}
}

// Failed reports that the tool could not do its job.
func Failed(format string, args ...any) error {
	return &Error{KindFailed, fmt.Sprintf(format, args...)}
}

// Denied reports that the sandbox refused something the tool needed.
func Denied(format string, args ...any) error {
	return &Error{KindDenied, fmt.Sprintf(format, args...)}
}

// Info describes one registered tool.
type Info struct {
	Name        string
	Description string
	InputSchema string
	// OutputSchema is the JSON Schema of the structured result, or "".
	OutputSchema string
	Annotations  Annotations
	// Meta is more metadata as a JSON object, or "".
	Meta string
}

// Reply is a tool's successful result as the contract carries it: the
// structured value as JSON text (nil for none) and the content parts.
type Reply struct {
	JSON    *string
	Content []Content
}

type entry struct {
	info Info
	run  func(input string) (Reply, error)
}

var (
	tools []entry
	names = map[string]int{}
	valid = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Register declares a tool. In is the input type (a struct); its schema is
// derived with SchemaOf. Out is the result type: any value encoding/json
// can write, or an Output[T] with content parts. When Out (or Output's T)
// is a struct, the tool's output schema is derived from it with
// OutputSchemaOf, and the host checks every result against it; with `any`
// the tool declares none. Options add annotations or set the output schema
// by hand. Call it from an init function. It panics on a declaration
// mistake (bad or duplicate name, empty description, an input type with no
// JSON Schema), which fails the plugin at load time.
func Register[In, Out any](name, description string, run func(In) (Out, error), options ...Option) {
	schema, err := SchemaOf(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("toolhost: tool %s: %v", name, err))
	}
	out := reflect.TypeFor[Out]()
	if wc, ok := reflect.Zero(out).Interface().(withContent); ok {
		out = wc.valueType()
	}
	var derived []Option
	if out.Kind() == reflect.Struct || (out.Kind() == reflect.Pointer && out.Elem().Kind() == reflect.Struct) {
		if out != reflect.TypeFor[NoValue]() && !out.Implements(jsonMarshaler) {
			outputSchema, err := OutputSchemaOf(out)
			if err != nil {
				panic(fmt.Sprintf("toolhost: tool %s: result type: %v", name, err))
			}
			derived = append(derived, OutputSchema(outputSchema))
		}
	}
	RegisterWithSchema(name, description, schema, func(input string) (any, error) {
		var in In
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return nil, InvalidInput("input does not fit %s: %v", name, err)
		}
		return run(in)
	}, append(derived, options...)...)
}

// RegisterWithSchema declares a tool with a hand-written JSON Schema; run
// gets the input JSON text and returns what Register's functions return.
// Options add an output schema (OutputSchema) and annotations.
func RegisterWithSchema(name, description string, schema map[string]any, run func(input string) (any, error), options ...Option) {
	if !valid.MatchString(name) {
		panic(fmt.Sprintf("toolhost: tool name %q must be 1-64 characters of a-z A-Z 0-9 _ -", name))
	}
	if _, dup := names[name]; dup {
		panic(fmt.Sprintf("toolhost: tool %s is registered twice", name))
	}
	if description == "" {
		panic(fmt.Sprintf("toolhost: tool %s needs a description", name))
	}
	var d declaration
	for _, option := range options {
		option(&d)
	}
	names[name] = len(tools)
	tools = append(tools, entry{
		info: Info{
			Name:         name,
			Description:  description,
			InputSchema:  jsonText(name, "schema", schema),
			OutputSchema: jsonText(name, "output schema", d.outputSchema),
			Annotations:  d.annotations,
			Meta:         jsonText(name, "meta", d.meta),
		},
		run: func(input string) (Reply, error) {
			out, err := run(input)
			if err != nil {
				return Reply{}, err
			}
			var content []Content
			if wc, ok := out.(withContent); ok {
				out, content = wc.parts()
				if out == nil {
					return Reply{Content: content}, nil
				}
			}
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // the output goes to a model, not into HTML
			if err := enc.Encode(out); err != nil {
				return Reply{}, Failed("tool %s returned a value that is not JSON: %v", name, err)
			}
			text := strings.TrimSuffix(b.String(), "\n")
			return Reply{JSON: &text, Content: content}, nil
		},
	})
}

// Tools lists the registered tools, in registration order.
func Tools() []Info {
	infos := make([]Info, len(tools))
	for i, t := range tools {
		infos[i] = t.info
	}
	return infos
}

// Call runs the tool `name` on `input` (JSON text) and returns its result,
// or an *Error.
func Call(name, input string) (reply Reply, err error) {
	i, ok := names[name]
	if !ok {
		return Reply{}, &Error{KindUnknownTool, fmt.Sprintf("no tool named %q in this plugin", name)}
	}
	defer func() {
		if p := recover(); p != nil {
			panicked(p)
		}
	}()
	reply, err = tools[i].run(input)
	if err == nil {
		return reply, nil
	}
	if e, ok := err.(*Error); ok {
		return Reply{}, e
	}
	return Reply{}, &Error{KindFailed, err.Error()}
}
