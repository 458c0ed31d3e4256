package toolhost

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// SchemaOf derives the JSON Schema of a Go type, following encoding/json's
// rules for field names. For struct fields:
//
//   - `json:"name"` names the property; `json:"-"` skips the field;
//   - a field is required unless it is a pointer or has `omitempty`;
//   - `description:"..."` describes the property;
//   - `enum:"a,b,c"` restricts a string to those values.
//
// Supported: bool, integers, floats, string, slices and arrays, maps with
// string keys, structs, pointers (optional) and `any` (any value).
// Unknown properties are refused (`additionalProperties: false`).
func SchemaOf(t reflect.Type) (map[string]any, error) {
	if t == nil {
		return nil, fmt.Errorf("the input type must be a struct, not an interface")
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("the input type must be a struct, not %s", t)
	}
	return schemaOf(t, 0, false)
}

// QuestionSchemaOf derives the schema of a question Ask asks with type t:
// SchemaOf's, in the shape of MCP elicitation's requestedSchema, which
// has no `additionalProperties` (an answer has only the schema's fields
// anyway).
func QuestionSchemaOf(t reflect.Type) (map[string]any, error) {
	schema, err := SchemaOf(t)
	if err != nil {
		return nil, err
	}
	delete(schema, "additionalProperties")
	return schema, nil
}

// OutputSchemaOf derives the JSON Schema of what encoding/json writes for a
// value of type t, a struct or a pointer to one: the same rules as
// SchemaOf, except that a field is required unless it has `omitempty`
// (encoding/json writes every other field), a pointer, slice or map field
// may be null, []byte is a base64 string, and a type with its own
// MarshalJSON or MarshalText may be any value.
func OutputSchemaOf(t reflect.Type) (map[string]any, error) {
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("an output schema needs a struct type, not %v", t)
	}
	return schemaOf(t, 0, true)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// orNull lets a schema's value also be null.
func orNull(schema map[string]any) map[string]any {
	if kind, ok := schema["type"].(string); ok {
		schema["type"] = []any{kind, "null"}
	}
	return schema
}

func schemaOf(t reflect.Type, depth int, output bool) (map[string]any, error) {
	if depth > 32 {
		return nil, fmt.Errorf("type %s nests too deeply (recursive types have no schema here)", t)
	}
	if output && depth > 0 {
		switch {
		case t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
			reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
			return map[string]any{}, nil
		case t.Kind() == reflect.Pointer:
			schema, err := schemaOf(t.Elem(), depth+1, output)
			if err != nil {
				return nil, err
			}
			return orNull(schema), nil
		case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
			return map[string]any{"type": []any{"string", "null"}}, nil
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Pointer:
		return schemaOf(t.Elem(), depth+1, output)
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Slice, reflect.Array:
		items, err := schemaOf(t.Elem(), depth+1, output)
		if err != nil {
			return nil, err
		}
		schema := map[string]any{"type": "array", "items": items}
		if output && t.Kind() == reflect.Slice {
			orNull(schema) // a nil slice is written as null
		}
		return schema, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map %s: JSON object keys are strings", t)
		}
		values, err := schemaOf(t.Elem(), depth+1, output)
		if err != nil {
			return nil, err
		}
		schema := map[string]any{"type": "object", "additionalProperties": values}
		if output {
			orNull(schema) // a nil map is written as null
		}
		return schema, nil
	case reflect.Struct:
		props := map[string]any{}
		required := []string{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" && opts == "" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			prop, err := schemaOf(f.Type, depth+1, output)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			if d := f.Tag.Get("description"); d != "" {
				prop["description"] = d
			}
			if e := f.Tag.Get("enum"); e != "" {
				values := []any{}
				for _, v := range strings.Split(e, ",") {
					values = append(values, v)
				}
				if _, nullable := prop["type"].([]any); nullable {
					values = append(values, nil)
				}
				prop["enum"] = values
			}
			props[name] = prop
			omitempty := strings.Contains(","+opts+",", ",omitempty,")
			optional := omitempty || (!output && f.Type.Kind() == reflect.Pointer)
			if !optional {
				required = append(required, name)
			}
		}
		schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			schema["required"] = required
		}
		return schema, nil
	}
	return nil, fmt.Errorf("type %s has no JSON Schema here", t)
}
