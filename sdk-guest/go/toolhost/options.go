package toolhost

import (
	"encoding/json"
	"fmt"
)

// Annotations are MCP's hints about how a tool behaves, for clients and
// people. Hints only, never a grant. Set them with the options Title,
// ReadOnly, Destructive, Idempotent and OpenWorld.
type Annotations struct {
	Title                                        string
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// An Option adds to a tool's declaration in Register or RegisterWithSchema.
type Option func(*declaration)

type declaration struct {
	outputSchema map[string]any
	annotations  Annotations
	meta         map[string]any
}

// Title is a human-readable title for the tool.
func Title(title string) Option { return func(d *declaration) { d.annotations.Title = title } }

// ReadOnly hints that the tool does (true) or does not (false) leave its
// environment unchanged.
func ReadOnly(yes bool) Option { return func(d *declaration) { d.annotations.ReadOnly = &yes } }

// Destructive hints that the tool may destroy or overwrite data.
func Destructive(yes bool) Option { return func(d *declaration) { d.annotations.Destructive = &yes } }

// Idempotent hints that a second identical call has no further effect.
func Idempotent(yes bool) Option { return func(d *declaration) { d.annotations.Idempotent = &yes } }

// OpenWorld hints that the tool reaches an open world (the web).
func OpenWorld(yes bool) Option { return func(d *declaration) { d.annotations.OpenWorld = &yes } }

// OutputSchema declares the JSON Schema of the tool's structured result
// (its root an object schema), in place of the one derived from the
// function's result type. The host checks every result against it: one
// that does not match is the error `output_schema_mismatch`, which the
// model sees.
func OutputSchema(schema map[string]any) Option {
	return func(d *declaration) { d.outputSchema = schema }
}

// Meta is more metadata for the tool, a JSON object (MCP's `_meta`),
// passed on untouched.
func Meta(meta map[string]any) Option { return func(d *declaration) { d.meta = meta } }

// jsonText is v as JSON text, or "" for nil; a panic names the tool.
func jsonText(tool, what string, v map[string]any) string {
	if v == nil {
		return ""
	}
	text, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("toolhost: tool %s: %s is not JSON: %v", tool, what, err))
	}
	return string(text)
}
