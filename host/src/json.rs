//! JSON written one way only: object keys sorted, no whitespace. Two values
//! equal as JSON are written the same, whatever order their keys came in:
//! what the loop compares repeated calls by, and what an MCP approval
//! names its call by.

use std::collections::BTreeSet;

use serde_json::Value;

/// `value` written with its object keys sorted (at every depth) and no
/// whitespace.
pub(crate) fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let keys: BTreeSet<&String> = map.keys().collect();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
