package toolhost

import (
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
	return schemaOf(t, 0)
}

func schemaOf(t reflect.Type, depth int) (map[string]any, error) {
	if depth > 32 {
		return nil, fmt.Errorf("type %s nests too deeply (recursive types have no schema here)", t)
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
		return schemaOf(t.Elem(), depth+1)
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Slice, reflect.Array:
		items, err := schemaOf(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map %s: JSON object keys are strings", t)
		}
		values, err := schemaOf(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
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
			prop, err := schemaOf(f.Type, depth+1)
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
				prop["enum"] = values
			}
			props[name] = prop
			optional := f.Type.Kind() == reflect.Pointer || strings.Contains(","+opts+",", ",omitempty,")
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
