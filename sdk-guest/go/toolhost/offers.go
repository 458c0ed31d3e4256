package toolhost

// What a plugin offers besides tools (contract 0.3): resources, resource
// templates, prompts and completions. Register them in init(), as tools:
//
//	func init() {
//		toolhost.RegisterResource(toolhost.Resource{
//			URI: "notes://today", Name: "today", MimeType: "text/plain",
//			Read: func(uri string, _ map[string]string) ([]toolhost.Content, error) {
//				return []toolhost.Content{toolhost.Text("Buy milk.")}, nil
//			},
//		})
//	}
//
// A plugin that registers any of them is built with the SDK's 0.3
// bindings (the scaffold's build.sh picks them when a Go file calls
// toolhost.RegisterResource, RegisterTemplate or RegisterPrompt); without,
// it is a 0.2 plugin, exactly as before. The host lists resources,
// templates and prompts once, when the plugin loads (so the lists must not
// depend on input or state); every read, prompt and completion is a call of
// its own, under the plugin's limits. A resource's URI must have a scheme
// the host gives the plugin: its name with `_` as `-`, or one its manifest
// lists in `resource_schemes`.

import (
	"fmt"
	"strings"
)

// KindNotFound: no such resource, prompt or argument (offers only; a tool
// that returns it fails as KindFailed does).
const KindNotFound Kind = KindUnknownTool + 1

// NotFound reports that a resource, prompt or argument does not exist.
func NotFound(format string, args ...any) error {
	return &Error{KindNotFound, fmt.Sprintf(format, args...)}
}

// Resource is a resource, or a resource template (its URI an RFC 6570
// level 1 template: "notes://{day}").
type Resource struct {
	URI         string
	Name        string
	Description string // or ""
	MimeType    string // or ""
	// Meta is more metadata as a JSON object (MCP `_meta`), or "".
	Meta string
	// Read reads uri: the resource's own, or for a template a URI it
	// matches, with the template's variables in vars (empty for a
	// resource). Each part is one of what was read: ResourceText or
	// ResourceBlob (the URI read, or one under it); Text, Image and Audio
	// are read as the URI read with the resource's MIME type (or theirs).
	Read func(uri string, vars map[string]string) ([]Content, error)
}

// PromptArg is an argument of a prompt.
type PromptArg struct {
	Name        string
	Description string // or ""
	Required    bool
}

// Role says who says a prompt's message.
type Role uint8

const (
	// User: the person's message.
	User Role = iota
	// Assistant: the model's.
	Assistant
)

// Message is one message of a rendered prompt: Text, Image, Audio,
// ResourceText or ResourceBlob, said by User or Assistant.
type Message struct {
	Role    Role
	Content Content
}

// UserMessage is a message the user says.
func UserMessage(c Content) Message { return Message{User, c} }

// AssistantMessage is a message the assistant says.
func AssistantMessage(c Content) Message { return Message{Assistant, c} }

// Prompt is a prompt: a name (a tool name's rules), its arguments and how
// to render it. Get receives the arguments given; the required ones are
// always there (the SDK checks).
type Prompt struct {
	Name        string
	Description string // or ""
	Arguments   []PromptArg
	Meta        string // a JSON object (MCP `_meta`), or ""
	Get         func(args map[string]string) ([]Message, error)
}

// Completer lists the values for an argument that fit value (what the
// user typed so far), best first; context holds the arguments filled in
// already.
type Completer func(value string, context map[string]string) ([]string, error)

type completerKey struct {
	template bool
	name     string
	argument string
}

var (
	resources, templates []Resource
	prompts              []Prompt
	promptIndex          = map[string]int{}
	completers           = map[completerKey]Completer{}
)

func checkResource(what string, r Resource) {
	if r.URI == "" || r.Name == "" || r.Read == nil {
		panic(fmt.Sprintf("toolhost: %s %q needs a URI, a name and a Read function", what, r.URI))
	}
}

// RegisterResource declares a resource. Call it from an init function; it
// panics on a declaration mistake, which fails the plugin at load time.
func RegisterResource(r Resource) {
	checkResource("resource", r)
	resources = append(resources, r)
}

// RegisterTemplate declares a resource template: r.URI is an RFC 6570
// level 1 template ("notes://{day}"), and Read gets its variables.
func RegisterTemplate(r Resource) {
	checkResource("template", r)
	templates = append(templates, r)
}

// RegisterPrompt declares a prompt.
func RegisterPrompt(p Prompt) {
	if !valid.MatchString(p.Name) {
		panic(fmt.Sprintf("toolhost: prompt name %q must be 1-64 characters of a-z A-Z 0-9 _ -", p.Name))
	}
	if _, dup := promptIndex[p.Name]; dup {
		panic(fmt.Sprintf("toolhost: prompt %s is registered twice", p.Name))
	}
	if p.Get == nil {
		panic(fmt.Sprintf("toolhost: prompt %s needs a Get function", p.Name))
	}
	promptIndex[p.Name] = len(prompts)
	prompts = append(prompts, p)
}

// CompletePrompt declares the completions of the prompt's argument.
func CompletePrompt(prompt, argument string, complete Completer) {
	completers[completerKey{false, prompt, argument}] = complete
}

// CompleteTemplate declares the completions of a variable of the template
// with URI template uriTemplate.
func CompleteTemplate(uriTemplate, variable string, complete Completer) {
	completers[completerKey{true, uriTemplate, variable}] = complete
}

// Resources lists the registered resources, in registration order.
func Resources() []Resource { return resources }

// Templates lists the registered resource templates.
func Templates() []Resource { return templates }

// Prompts lists the registered prompts.
func Prompts() []Prompt { return prompts }

// expand is level-1 template t with vars filled in.
func expand(t string, vars map[string]string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(t, '{')
		end := strings.IndexByte(t, '}')
		if open < 0 || end < open {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:open])
		b.WriteString(vars[t[open+1:end]])
		t = t[end+1:]
	}
}

// guard runs f, and turns a panic into a trap (as Call does) and any
// error into an *Error.
func guard[T any](f func() (T, error)) (value T, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked(p)
		}
	}()
	value, err = f()
	if err != nil {
		if _, ok := err.(*Error); !ok {
			err = &Error{KindFailed, err.Error()}
		}
	}
	return value, err
}

// ReadPart is one part of a read as the contract carries it.
type ReadPart struct {
	URI      string
	MimeType string
	Text     string
	Data     []byte
	Blob     bool
}

// Read reads uri: a registered resource (vars empty), or a URI that a
// registered template matches, with its variables.
func Read(uri string, vars map[string]string) ([]ReadPart, error) {
	var found *Resource
	for i := range resources {
		if resources[i].URI == uri {
			found = &resources[i]
			break
		}
	}
	// The host matched a template and gives its variables: the one whose
	// expansion is this URI is it.
	for i := range templates {
		if found == nil && expand(templates[i].URI, vars) == uri {
			found = &templates[i]
		}
	}
	if found == nil {
		return nil, NotFound("no resource %s in this plugin", uri)
	}
	parts, err := guard(func() ([]Content, error) { return found.Read(uri, vars) })
	if err != nil {
		return nil, err
	}
	out := make([]ReadPart, len(parts))
	for i, c := range parts {
		p := ReadPart{URI: uri, MimeType: found.MimeType, Text: c.Text, Data: c.Data, Blob: c.Blob}
		switch c.Kind {
		case ContentResource:
			p.URI, p.MimeType = c.URI, c.MediaType
		case ContentImage, ContentAudio:
			p.MimeType, p.Blob = c.MediaType, true
		}
		out[i] = p
	}
	return out, nil
}

// GetPrompt renders prompt name with args.
func GetPrompt(name string, args map[string]string) ([]Message, error) {
	i, ok := promptIndex[name]
	if !ok {
		return nil, NotFound("no prompt named %q in this plugin", name)
	}
	p := prompts[i]
	for _, a := range p.Arguments {
		if _, given := args[a.Name]; a.Required && !given {
			return nil, InvalidInput("prompt %s needs its argument %s", name, a.Name)
		}
	}
	return guard(func() ([]Message, error) { return p.Get(args) })
}

// Complete lists the values for argument of the prompt name (or, with
// template, of the template with URI template name).
func Complete(template bool, name, argument, value string, context map[string]string) ([]string, error) {
	complete, ok := completers[completerKey{template, name, argument}]
	if !ok {
		// Nothing to offer is an empty list, not an error.
		return nil, nil
	}
	return guard(func() ([]string, error) { return complete(value, context) })
}
