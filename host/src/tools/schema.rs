//! Budgets on input schemas and inputs: the host compiles every tool's JSON
//! Schema and validates every input against it *outside* the sandbox, where
//! fuel, deadline and memory caps do not apply. A schema comes from a plugin
//! (untrusted) and an input from the model (untrusted), so both are checked
//! against a budget first, without recursion, before any schema compiler or
//! validator sees them.
//!
//! The rule for schemas: bounded size and nesting; every `$ref` a local JSON
//! pointer (`#`, `#/$defs/Name`) that resolves; no `$ref` cycle, so
//! recursive schemas are refused (tool inputs are finite JSON, and model
//! providers cut recursion anyway); a bounded `$ref` chain; and a bounded
//! *expanded* size: the number of schema nodes once every `$ref` is replaced
//! by its target. Validating one input node visits each expanded schema
//! node at most once per instance location, so validation work is at most
//! the expanded size times the input's node count, both capped here. That
//! is what makes an `anyOf` ladder of `$ref`s (2^n work in a few bytes)
//! fail at load instead of at the first call.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// How big a tool's input schema may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaBudget {
    /// Nesting depth of the schema document (objects and arrays).
    pub max_depth: usize,
    /// JSON values in the schema document.
    pub max_nodes: usize,
    /// `$ref`s in the schema document.
    pub max_refs: usize,
    /// `$ref`s followed one after the other (a ref to a schema with a ref
    /// to a schema with a ref ...).
    pub max_ref_chain: usize,
    /// Schema nodes once every `$ref` is expanded.
    pub max_expanded_nodes: usize,
}

impl Default for SchemaBudget {
    fn default() -> Self {
        Self {
            max_depth: 32,
            max_nodes: 20_000,
            max_refs: 256,
            max_ref_chain: 16,
            max_expanded_nodes: 50_000,
        }
    }
}

/// How big one input may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputBudget {
    /// Bytes of input text.
    pub max_bytes: usize,
    /// Nesting depth of the input (objects and arrays).
    pub max_depth: usize,
    /// JSON values in the input.
    pub max_nodes: usize,
}

impl Default for InputBudget {
    fn default() -> Self {
        Self {
            max_bytes: 1 << 20,
            max_depth: 64,
            max_nodes: 100_000,
        }
    }
}

/// Why an input is over its [`InputBudget`]; the text says what to send
/// instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputOverBudget {
    /// Nested deeper than [`InputBudget::max_depth`].
    #[error("the input is nested more than {max_depth} levels deep; flatten it")]
    TooDeep {
        /// The budget.
        max_depth: usize,
    },
    /// More values than [`InputBudget::max_nodes`].
    #[error("the input has more than {max_nodes} JSON values; send less at once")]
    TooManyValues {
        /// The budget.
        max_nodes: usize,
    },
}

/// Why a tool's input schema is refused (over its [`SchemaBudget`], or
/// using what the rule in the module docs forbids), in words a plugin
/// author can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// Nested deeper than [`SchemaBudget::max_depth`].
    #[error("the schema is nested more than {max_depth} levels deep")]
    TooDeep {
        /// The budget.
        max_depth: usize,
    },
    /// More values than [`SchemaBudget::max_nodes`].
    #[error("the schema has more than {max_nodes} JSON values")]
    TooManyValues {
        /// The budget.
        max_nodes: usize,
    },
    /// A dynamic or recursive reference keyword.
    #[error("`{keyword}` is not supported; use a local `$ref` to a non-recursive schema")]
    UnsupportedKeyword {
        /// `$dynamicRef` or `$recursiveRef`.
        keyword: &'static str,
    },
    /// An `$id` below the root.
    #[error("`$id` inside the schema changes what `$ref`s mean; keep `$id` (if any) at the root")]
    NestedId,
    /// More `$ref`s than [`SchemaBudget::max_refs`].
    #[error("the schema has more than {max_refs} `$ref`s")]
    TooManyRefs {
        /// The budget.
        max_refs: usize,
    },
    /// A `$ref` to another document.
    #[error(
        "`$ref` {reference:?} is not local; only `#/...` JSON pointers into the same schema are allowed (no URLs, no files)"
    )]
    NonLocalRef {
        /// The `$ref`.
        reference: String,
    },
    /// A `$ref` to an anchor.
    #[error("`$ref` {reference:?} names an anchor; use a JSON pointer such as `#/$defs/Name`")]
    AnchorRef {
        /// The `$ref`.
        reference: String,
    },
    /// A `$ref` whose fragment does not decode.
    #[error("`$ref` {reference:?} is not a valid URI fragment")]
    InvalidFragment {
        /// The `$ref`.
        reference: String,
    },
    /// A `$ref` to nothing.
    #[error("`$ref` {reference:?} points to nothing in the schema")]
    DanglingRef {
        /// The `$ref`.
        reference: String,
    },
    /// A chain of `$ref`s longer than [`SchemaBudget::max_ref_chain`].
    #[error("the schema follows more than {max_ref_chain} `$ref`s in a row (from {from:?})")]
    RefChain {
        /// The budget.
        max_ref_chain: usize,
        /// Where the chain starts.
        from: String,
    },
    /// Over [`SchemaBudget::max_expanded_nodes`] once `$ref`s are expanded.
    #[error(
        "the schema expands to more than {max_expanded_nodes} nodes once its `$ref`s are followed{}; share less, or flatten it",
        from.as_ref().map(|r| format!(" (from {r:?})")).unwrap_or_default()
    )]
    Expands {
        /// The budget.
        max_expanded_nodes: usize,
        /// The `$ref` whose target is over it; `None` for the whole schema.
        from: Option<String>,
    },
    /// `$ref`s that refer back to themselves.
    #[error(
        "the schema's `$ref`s form a cycle through {through:?}; recursive schemas are not allowed, bound the depth instead"
    )]
    Cycle {
        /// A `$ref` on the cycle.
        through: String,
    },
}

/// Walk `value` without recursion, calling `visit(node, depth)` on every
/// value; stops with the first error `visit` returns.
fn walk<'a, E>(
    value: &'a Value,
    mut visit: impl FnMut(&'a Value, usize) -> Result<(), E>,
) -> Result<(), E> {
    let mut stack = vec![(value, 0usize)];
    while let Some((node, depth)) = stack.pop() {
        visit(node, depth)?;
        match node {
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// Check an input against `budget` (depth and node count; the byte count is
/// checked on the text, before parsing).
///
/// # Errors
///
/// What is over the budget, for an `invalid_input` error.
pub fn check_input(input: &Value, budget: &InputBudget) -> Result<(), InputOverBudget> {
    let mut nodes = 0usize;
    walk(input, |_, depth| {
        nodes += 1;
        if depth > budget.max_depth {
            return Err(InputOverBudget::TooDeep {
                max_depth: budget.max_depth,
            });
        }
        if nodes > budget.max_nodes {
            return Err(InputOverBudget::TooManyValues {
                max_nodes: budget.max_nodes,
            });
        }
        Ok(())
    })
}

/// The `$ref`s directly inside the subtree at `node` (not following them),
/// with a count of the subtree's nodes.
fn refs_in(node: &Value) -> (usize, Vec<&str>) {
    let mut nodes = 0;
    let mut refs = Vec::new();
    let _ = walk(node, |n, _| -> Result<(), std::convert::Infallible> {
        nodes += 1;
        if let Some(r) = n.get("$ref").and_then(Value::as_str) {
            refs.push(r);
        }
        Ok(())
    });
    (nodes, refs)
}

/// The value a local `$ref` names in `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, SchemaError> {
    let reference_owned = || reference.to_owned();
    let Some(pointer) = reference.strip_prefix('#') else {
        return Err(SchemaError::NonLocalRef {
            reference: reference_owned(),
        });
    };
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(SchemaError::AnchorRef {
            reference: reference_owned(),
        });
    }
    let decoded = percent_decode(pointer).ok_or_else(|| SchemaError::InvalidFragment {
        reference: reference_owned(),
    })?;
    root.pointer(&decoded)
        .ok_or_else(|| SchemaError::DanglingRef {
            reference: reference_owned(),
        })
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Check `schema` against `budget` (see the module docs for the rule).
///
/// # Errors
///
/// What is over the budget or not allowed, in words a plugin author can act
/// on.
pub fn check_schema(schema: &Value, budget: &SchemaBudget) -> Result<(), SchemaError> {
    let refs = check_nodes(schema, budget)?;
    if refs == 0 {
        return Ok(());
    }
    let targets = ref_targets(schema)?;
    let marks = measure_targets(&targets, budget)?;
    let (root_nodes, root_refs) = refs_in(schema);
    let mut expanded = root_nodes;
    for reference in &root_refs {
        if let Some(Mark::Done { expanded: e, .. }) = marks.get(reference) {
            expanded = expanded.saturating_add(*e);
        }
    }
    if expanded > budget.max_expanded_nodes {
        return Err(SchemaError::Expands {
            max_expanded_nodes: budget.max_expanded_nodes,
            from: None,
        });
    }
    Ok(())
}

/// Check every node of `schema` as written (depth, count, keywords, a
/// nested `$id`, the number of `$ref`s), and return how many `$ref`s it
/// holds.
fn check_nodes(schema: &Value, budget: &SchemaBudget) -> Result<usize, SchemaError> {
    let mut nodes = 0usize;
    let mut refs = 0usize;
    walk(schema, |node, depth| {
        nodes += 1;
        if depth > budget.max_depth {
            return Err(SchemaError::TooDeep {
                max_depth: budget.max_depth,
            });
        }
        if nodes > budget.max_nodes {
            return Err(SchemaError::TooManyValues {
                max_nodes: budget.max_nodes,
            });
        }
        let Value::Object(map) = node else {
            return Ok(());
        };
        for keyword in ["$dynamicRef", "$recursiveRef"] {
            if map.get(keyword).is_some_and(Value::is_string) {
                return Err(SchemaError::UnsupportedKeyword { keyword });
            }
        }
        if depth > 0 && map.get("$id").is_some_and(Value::is_string) {
            return Err(SchemaError::NestedId);
        }
        if map.get("$ref").is_some_and(Value::is_string) {
            refs += 1;
            if refs > budget.max_refs {
                return Err(SchemaError::TooManyRefs {
                    max_refs: budget.max_refs,
                });
            }
        }
        Ok(())
    })?;
    Ok(refs)
}

/// One distinct `$ref` target: its size, and the refs inside it.
struct Target<'a> {
    nodes: usize,
    refs: Vec<&'a str>,
}

/// The `$ref` graph: every target reachable from the root, by reference.
fn ref_targets(schema: &Value) -> Result<HashMap<&str, Target<'_>>, SchemaError> {
    let mut targets: HashMap<&str, Target<'_>> = HashMap::new();
    let (_, root_refs) = refs_in(schema);
    let mut pending: Vec<&str> = root_refs;
    while let Some(reference) = pending.pop() {
        if targets.contains_key(reference) {
            continue;
        }
        let (nodes, inner) = refs_in(resolve(schema, reference)?);
        pending.extend(inner.iter().copied());
        targets.insert(reference, Target { nodes, refs: inner });
    }
    Ok(targets)
}

/// Where the search over the `$ref` graph stands with one target.
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    /// Entered, its refs not all measured yet.
    Open,
    /// Measured: its size with every ref expanded, and its longest chain.
    Done { expanded: usize, chain: usize },
}

/// Expanded size and chain length per target, in dependency order
/// (iterative depth-first search; a target met again while still open
/// closes a cycle). Each is checked against `budget` as it is measured.
fn measure_targets<'a>(
    targets: &HashMap<&'a str, Target<'a>>,
    budget: &SchemaBudget,
) -> Result<HashMap<&'a str, Mark>, SchemaError> {
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    for &start in targets.keys() {
        let mut stack: Vec<(&str, bool)> = vec![(start, false)];
        while let Some((reference, children_done)) = stack.pop() {
            let target = &targets[reference];
            if children_done {
                let mark = measure_target(reference, target, &marks, budget)?;
                marks.insert(reference, mark);
                continue;
            }
            match marks.get(reference) {
                Some(Mark::Done { .. }) => continue,
                Some(Mark::Open) => {
                    return Err(SchemaError::Cycle {
                        through: reference.to_owned(),
                    });
                }
                None => {}
            }
            marks.insert(reference, Mark::Open);
            stack.push((reference, true));
            let mut seen = HashSet::new();
            for inner in &target.refs {
                if !seen.insert(*inner) {
                    continue;
                }
                match marks.get(inner) {
                    Some(Mark::Open) => {
                        return Err(SchemaError::Cycle {
                            through: (*inner).to_owned(),
                        });
                    }
                    Some(Mark::Done { .. }) => {}
                    None => stack.push((inner, false)),
                }
            }
        }
    }
    Ok(marks)
}

/// Measure `target` (at `reference`) once every ref inside it is done in
/// `marks`, and check its chain and expanded size against `budget`.
fn measure_target(
    reference: &str,
    target: &Target<'_>,
    marks: &HashMap<&str, Mark>,
    budget: &SchemaBudget,
) -> Result<Mark, SchemaError> {
    let mut expanded = target.nodes;
    let mut chain = 1;
    for inner in &target.refs {
        let Some(Mark::Done {
            expanded: e,
            chain: c,
        }) = marks.get(inner).copied()
        else {
            unreachable!("children are done first");
        };
        expanded = expanded.saturating_add(e);
        chain = chain.max(c + 1);
    }
    if chain > budget.max_ref_chain {
        return Err(SchemaError::RefChain {
            max_ref_chain: budget.max_ref_chain,
            from: reference.to_owned(),
        });
    }
    if expanded > budget.max_expanded_nodes {
        return Err(SchemaError::Expands {
            max_expanded_nodes: budget.max_expanded_nodes,
            from: Some(reference.to_owned()),
        });
    }
    Ok(Mark::Done { expanded, chain })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(schema: Value) -> Result<(), String> {
        check_schema(&schema, &SchemaBudget::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn ordinary_schemas_pass() {
        check(json!({"type": "object", "properties": {"a": {"type": "string"}}})).unwrap();
        check(json!({
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/Point"}, "q": {"$ref": "#/$defs/Point"}},
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}}
        }))
        .unwrap();
        check(json!({"$defs": {"a/b": {"type": "string"}}, "$ref": "#/$defs/a~1b"})).unwrap();
    }

    #[test]
    fn a_long_ref_chain_is_refused_without_recursion() {
        let mut defs = serde_json::Map::new();
        for i in 0..5000 {
            defs.insert(
                format!("d{i}"),
                json!({"$ref": format!("#/$defs/d{}", i + 1)}),
            );
        }
        defs.insert("d5000".into(), json!({"type": "string"}));
        let e = check(json!({"$defs": defs, "$ref": "#/$defs/d0"})).unwrap_err();
        assert!(e.contains("`$ref`s"), "{e}");
    }

    #[test]
    fn cycles_remote_refs_and_ladders_are_refused() {
        let e = check(json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}))
            .unwrap_err();
        assert!(e.contains("cycle"), "{e}");
        let e = check(json!({"$ref": "#"})).unwrap_err();
        assert!(e.contains("cycle"), "{e}");
        let e = check(json!({"$ref": "https://example.com/s.json"})).unwrap_err();
        assert!(e.contains("not local"), "{e}");
        let e = check(json!({"$ref": "#/$defs/missing"})).unwrap_err();
        assert!(e.contains("points to nothing"), "{e}");
        // Each level refers twice to the level below: 2^24 nodes expanded.
        let mut defs = serde_json::Map::new();
        for i in 0..24 {
            let next = format!("#/$defs/l{}", i + 1);
            defs.insert(
                format!("l{i}"),
                json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert("l24".into(), json!({"type": "integer"}));
        let e = check(json!({"$defs": defs, "$ref": "#/$defs/l0"})).unwrap_err();
        assert!(e.contains("expands") || e.contains("in a row"), "{e}");
    }

    #[test]
    fn deep_and_huge_inputs_are_refused() {
        let budget = InputBudget::default();
        let mut deep = json!(1);
        for _ in 0..100 {
            deep = json!([deep]);
        }
        assert!(
            check_input(&deep, &budget)
                .unwrap_err()
                .to_string()
                .contains("nested")
        );
        let wide = Value::Array(vec![json!(0); 200_000]);
        assert!(
            check_input(&wide, &budget)
                .unwrap_err()
                .to_string()
                .contains("JSON values")
        );
        check_input(&json!({"a": [1, 2, {"b": "c"}]}), &budget).unwrap();
    }

    #[test]
    fn refusals_are_typed_and_keep_their_text() {
        let budget = InputBudget {
            max_depth: 1,
            ..InputBudget::default()
        };
        assert_eq!(
            check_input(&json!([[[]]]), &budget),
            Err(InputOverBudget::TooDeep { max_depth: 1 })
        );
        let e = check_schema(&json!({"$ref": "#/$defs/x"}), &SchemaBudget::default());
        assert_eq!(
            e,
            Err(SchemaError::DanglingRef {
                reference: "#/$defs/x".into()
            })
        );
        let e = check_schema(&json!({"$ref": "#"}), &SchemaBudget::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the schema's `$ref`s form a cycle through \"#\"; recursive schemas are not allowed, bound the depth instead"
        );
        let e = SchemaError::Expands {
            max_expanded_nodes: 5,
            from: None,
        };
        assert_eq!(
            e.to_string(),
            "the schema expands to more than 5 nodes once its `$ref`s are followed; share less, or flatten it"
        );
    }
}
