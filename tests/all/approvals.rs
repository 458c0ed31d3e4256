//! Approvals: a call that needs a person's yes waits for one. In a program
//! the run pauses and is resumed with the decisions (in the same process or
//! after its transcript was saved and loaded); `toolhost run` asks on the
//! terminal, or pauses or refuses without one; `toolhost serve` asks the
//! MCP client's user through elicitation.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::llm::{Provider, ProviderKind, ProviderOptions};
use toolhost::tools::{ExecOptions, NativeTool, ToolRegistry};

mod cli;
mod cli_ids;
mod library;
mod mcp;
mod tampered;

fn provider(kind: ProviderKind, url: String) -> Arc<dyn Provider> {
    kind.build(ProviderOptions {
        base_url: Some(url),
        model: Some("test-model".into()),
        api_key: Some("test-key".into()),
        ..ProviderOptions::default()
    })
    .expect("a provider for the fake server")
}

/// `delete` (asks for approval itself, in its options), `add` (needs it
/// only where a policy names it) and `read` (never). Each counts its runs
/// in `runs`.
fn registry(runs: &Arc<std::sync::Mutex<Vec<String>>>) -> Arc<ToolRegistry> {
    let r = ToolRegistry::new();
    let seen = Arc::clone(runs);
    r.register_with(
        Arc::new(NativeTool::new(
            "delete",
            "Deletes a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            move |input: Value| {
                let seen = Arc::clone(&seen);
                async move {
                    seen.lock()
                        .unwrap()
                        .push(format!("delete {}", input["path"]));
                    Ok(json!({"deleted": input["path"]}))
                }
            },
        )),
        ExecOptions {
            needs_approval: true,
            ..ExecOptions::default()
        },
    )
    .expect("delete");
    let seen = Arc::clone(runs);
    r.register(NativeTool::new(
        "add",
        "Adds a and b.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        move |input: Value| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push("add".into());
                Ok(json!(
                    input["a"].as_f64().unwrap_or(0.0) + input["b"].as_f64().unwrap_or(0.0)
                ))
            }
        },
    ))
    .expect("add");
    let seen = Arc::clone(runs);
    r.register(NativeTool::new(
        "read",
        "Reads a file.",
        json!({"type": "object"}),
        move |_| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push("read".into());
                Ok(json!("contents"))
            }
        },
    ))
    .expect("read");
    Arc::new(r)
}
