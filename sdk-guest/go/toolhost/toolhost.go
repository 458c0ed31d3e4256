// Package toolhost lets a Go plugin declare toolhost tools as typed
// functions. The input type is a struct; its JSON Schema is derived from the
// struct's fields and tags, and the host validates every input against it
// before the function runs.
//
//	type GreetInput struct {
//		Name  string `json:"name" description:"Who to greet."`
//		Style string `json:"style,omitempty" enum:"short,long"`
//	}
//
//	func init() {
//		toolhost.Register("go_greet", "Greet someone.", func(in GreetInput) (any, error) {
//			if in.Name == "" {
//				return nil, toolhost.InvalidInput("name must not be empty")
//			}
//			return map[string]string{"greeting": "Hello, " + in.Name}, nil
//		})
//	}
//
// Return an error made with InvalidInput, Failed or Denied for a structured
// tool error; any other error becomes `failed` with its message. A panic
// ends the call with kind `trap`, as a Rust plugin's panic does, its message
// and FILE:LINE in the error.
package toolhost

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"wit_component/toolhost_plugin_host"
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
}

type entry struct {
	info Info
	run  func(input string) (string, error)
}

var (
	tools []entry
	names = map[string]int{}
	valid = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Register declares a tool. In is the input type (a struct); its schema is
// derived with SchemaOf. Call it from an init function. It panics on a
// declaration mistake (bad or duplicate name, empty description, an input
// type with no JSON Schema), which fails the plugin at load time.
func Register[In any](name, description string, run func(In) (any, error)) {
	var zero In
	schema, err := SchemaOf(reflect.TypeOf(zero))
	if err != nil {
		panic(fmt.Sprintf("toolhost: tool %s: %v", name, err))
	}
	RegisterWithSchema(name, description, schema, func(input string) (any, error) {
		var in In
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return nil, InvalidInput("input does not fit %s: %v", name, err)
		}
		return run(in)
	})
}

// RegisterWithSchema declares a tool with a hand-written JSON Schema; run
// gets the input JSON text.
func RegisterWithSchema(name, description string, schema map[string]any, run func(input string) (any, error)) {
	if !valid.MatchString(name) {
		panic(fmt.Sprintf("toolhost: tool name %q must be 1-64 characters of a-z A-Z 0-9 _ -", name))
	}
	if _, dup := names[name]; dup {
		panic(fmt.Sprintf("toolhost: tool %s is registered twice", name))
	}
	if description == "" {
		panic(fmt.Sprintf("toolhost: tool %s needs a description", name))
	}
	text, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("toolhost: tool %s: schema is not JSON: %v", name, err))
	}
	names[name] = len(tools)
	tools = append(tools, entry{
		info: Info{name, description, string(text)},
		run: func(input string) (string, error) {
			out, err := run(input)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // the output goes to a model, not into HTML
			if err := enc.Encode(out); err != nil {
				return "", Failed("tool %s returned a value that is not JSON: %v", name, err)
			}
			return strings.TrimSuffix(b.String(), "\n"), nil
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

// Call runs the tool `name` on `input` (JSON text) and returns its output
// as JSON text, or an *Error.
func Call(name, input string) (output string, err error) {
	i, ok := names[name]
	if !ok {
		return "", &Error{KindUnknownTool, fmt.Sprintf("no tool named %q in this plugin", name)}
	}
	defer func() {
		if p := recover(); p != nil {
			panicked(p)
		}
	}()
	output, err = tools[i].run(input)
	if err == nil {
		return output, nil
	}
	if e, ok := err.(*Error); ok {
		return "", e
	}
	return "", &Error{KindFailed, err.Error()}
}

// Level is a log level.
type Level = toolhost_plugin_host.Level

// Log levels.
const (
	LevelTrace = toolhost_plugin_host.Level_Trace
	LevelDebug = toolhost_plugin_host.Level_Debug
	LevelInfo  = toolhost_plugin_host.Level_Info
	LevelWarn  = toolhost_plugin_host.Level_Warn
	LevelError = toolhost_plugin_host.Level_Error
)

// Log writes a line to the host's log, tagged with the plugin's name.
func Log(level Level, format string, args ...any) {
	toolhost_plugin_host.Log(level, fmt.Sprintf(format, args...))
}

// Config returns a value from the manifest's [config] table.
func Config(key string) (string, bool) {
	v := toolhost_plugin_host.Config(key)
	if v.IsNone() {
		return "", false
	}
	return v.Some(), true
}
