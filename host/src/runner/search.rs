//! The search tool of [`ToolSearch`]: its definition, the tools the model
//! found so far (read from the conversation), and the answer to a search.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::config::ToolSearch;
use super::execute::executed_record;
use super::outcome::CallRecord;
use crate::llm::{Message, ToolCall};
use crate::tools::search::ToolIndex;
use crate::tools::{CallReport, ExecOptions, ToolError, ToolSpec};

/// Where the search tool's calls route: no registry name starts with `@`,
/// so no registry tool is ever called in its place.
pub(super) const ROUTE: &str = "@tool_search";

/// The longest query read.
const MAX_QUERY: usize = 1000;

/// The search tool's definition, over `held_back` tools.
pub(super) fn spec(search: &ToolSearch, held_back: usize) -> ToolSpec {
    ToolSpec {
        name: search.tool_name.clone(),
        description: format!(
            "Find tools for a task among {held_back} more tools that are not listed here. \
             Describe what you need in a few words (\"convert currency\", \"open a GitHub \
             issue\"); the tools found (at most {}) can be called from your next message on.",
            search.max_results
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the tool should do, in a few words."
                },
            },
            "required": ["query"],
        }),
    }
}

/// The tools found by the searches in `messages` (their successful
/// results), the most recently found last, at most
/// [`ToolSearch::max_found`] of them.
pub(super) fn found(search: &ToolSearch, messages: &[Message]) -> Vec<String> {
    let mut searches = HashSet::new();
    let mut found: Vec<String> = Vec::new();
    for message in messages {
        match message {
            Message::Assistant(answer) => searches.extend(
                answer
                    .tool_calls
                    .iter()
                    .filter(|c| c.name == search.tool_name)
                    .map(|c| c.id.as_str()),
            ),
            Message::Tool(result)
                if !result.is_error && searches.contains(result.tool_call_id.as_str()) =>
            {
                let Ok(answer) = serde_json::from_str::<Value>(&result.content) else {
                    continue;
                };
                let names = answer["found"].as_array().into_iter().flatten();
                for name in names.filter_map(|t| t["name"].as_str()) {
                    found.retain(|f| f != name);
                    found.push(name.to_owned());
                }
            }
            _ => {}
        }
    }
    let older = found.len().saturating_sub(search.max_found);
    found.split_off(older)
}

/// The answer to a search whose arguments are `arguments` (JSON text),
/// among `held_back` tools: the best matches' names and descriptions.
///
/// # Errors
///
/// `invalid_input` when the arguments carry no query.
pub(super) fn answer(
    search: &ToolSearch,
    held_back: &[&ToolSpec],
    arguments: &str,
) -> Result<Value, ToolError> {
    let query = serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|a| a.get("query")?.as_str().map(str::to_owned))
        .filter(|q| !q.trim().is_empty())
        .ok_or_else(|| {
            ToolError::invalid_input(format!(
                "`{}` takes {{\"query\": \"what the tool should do\"}}",
                search.tool_name
            ))
        })?;
    let query: String = query.chars().take(MAX_QUERY).collect();
    let index = ToolIndex::new(held_back.iter().copied());
    let hits = index.search(&query, search.max_results);
    let found: Vec<Value> = hits
        .iter()
        .filter_map(|hit| held_back.iter().find(|t| t.name == hit.name))
        .map(|t| json!({"name": t.name, "description": t.description}))
        .collect();
    let message = if found.is_empty() {
        format!("No tool matches \"{query}\"; try other words, or do without.")
    } else {
        "These tools can be called from your next message on.".to_owned()
    };
    Ok(json!({"found": found, "message": message}))
}

/// The record of search `call` among `held_back` tools, answered by the
/// loop itself (no registry tool runs).
pub(super) fn record(
    search: &ToolSearch,
    held_back: &[&ToolSpec],
    call: &ToolCall,
    media_budget: usize,
) -> CallRecord {
    let started = std::time::Instant::now();
    let output = answer(search, held_back, &call.arguments);
    let report = CallReport {
        structured: output.is_ok(),
        output,
        content: Vec::new(),
        options: ExecOptions::default(),
        attempts: 1,
    };
    executed_record(call.clone(), report, started.elapsed(), media_budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{AssistantMessage, ToolResult};

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: "{}".to_owned(),
            signature: None,
        }
    }

    fn result(id: &str, content: Value, is_error: bool) -> Message {
        Message::Tool(ToolResult {
            tool_call_id: id.to_owned(),
            name: "tool_search".to_owned(),
            content: content.to_string(),
            is_error,
            parts: Vec::new(),
        })
    }

    fn asked(calls: Vec<ToolCall>) -> Message {
        Message::Assistant(AssistantMessage {
            tool_calls: calls,
            ..AssistantMessage::default()
        })
    }

    #[test]
    fn what_was_found_is_read_back_from_the_searches_results_only() {
        let search = ToolSearch {
            max_found: 3,
            ..ToolSearch::default()
        };
        let found_one = |names: &[&str]| json!({"found": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()});
        let messages = vec![
            asked(vec![call("a", "tool_search"), call("b", "other")]),
            result("a", found_one(&["w", "x"]), false),
            // Another tool's result that looks like one is not a search.
            result("b", found_one(&["evil"]), false),
            asked(vec![call("c", "tool_search"), call("d", "tool_search")]),
            result("c", found_one(&["y", "w"]), false),
            // A failed search found nothing.
            result("d", found_one(&["failed"]), true),
            asked(vec![call("e", "tool_search")]),
            result("e", found_one(&["z"]), false),
        ];
        // Most recent last; `x`, the oldest, is pushed out by the cap.
        assert_eq!(found(&search, &messages), ["y", "w", "z"]);
    }

    #[test]
    fn a_search_needs_a_query_and_may_find_nothing() {
        let search = ToolSearch::default();
        let spec = ToolSpec {
            name: "weather_forecast".into(),
            description: "The weather forecast for a city.".into(),
            input_schema: json!({"type": "object"}),
        };
        let held = [&spec];
        for bad in ["{}", "not json", r#"{"query": "  "}"#, r#"{"query": 3}"#] {
            let e = answer(&search, &held, bad).unwrap_err();
            assert_eq!(e.kind, crate::tools::ToolErrorKind::InvalidInput, "{bad}");
        }
        let hit = answer(&search, &held, r#"{"query": "weather in Paris"}"#).unwrap();
        assert_eq!(hit["found"][0]["name"], "weather_forecast");
        let none = answer(&search, &held, r#"{"query": "zebra"}"#).unwrap();
        assert_eq!(none["found"], json!([]));
        assert!(
            none["message"]
                .as_str()
                .unwrap()
                .contains("No tool matches")
        );
    }
}
