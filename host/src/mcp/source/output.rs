//! A `tools/call` result as a tool's output or [`ToolError`].

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::tools::{ToolError, ToolErrorKind};

/// The output of a call to `server`'s tool: `structuredContent` if the
/// result has it, else its text blocks joined by newlines as one JSON
/// string (other blocks are named, not copied: `[image content omitted]`),
/// else `null`. `isError: true` is `tool_failed` with that text. A result
/// larger than `max_bytes` (as JSON text) is `output_too_large`.
pub(super) fn output_of(
    server: &str,
    result: CallToolResult,
    max_bytes: usize,
) -> Result<Value, ToolError> {
    let size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
    if size > max_bytes {
        return Err(ToolError::new(
            ToolErrorKind::OutputTooLarge,
            format!(
                "MCP server `{server}` answered with {size} bytes, more than the {max_bytes} allowed; raise `max_result_kb` in its [[mcp]] declaration if the result is wanted"
            ),
        ));
    }
    let text = || {
        result
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(t) => t.text.clone(),
                ContentBlock::Image(_) => "[image content omitted]".to_owned(),
                ContentBlock::Audio(_) => "[audio content omitted]".to_owned(),
                ContentBlock::Resource(_) => "[embedded resource omitted]".to_owned(),
                ContentBlock::ResourceLink(_) => "[resource link omitted]".to_owned(),
                _ => "[content omitted]".to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    if result.is_error == Some(true) {
        let mut message = text();
        if message.is_empty()
            && let Some(structured) = &result.structured_content
        {
            message = structured.to_string();
        }
        if message.is_empty() {
            message = format!("MCP server `{server}` reported an error without saying which");
        }
        return Err(ToolError::failed(message));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    if result.content.is_empty() {
        return Ok(Value::Null);
    }
    Ok(Value::String(text()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_blocks_are_joined_and_structured_content_wins() {
        let r = result(json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "text", "text": "two"}
        ]}));
        assert_eq!(
            output_of("s", r, 1 << 20),
            Ok(json!("one\n[image content omitted]\ntwo"))
        );
        let r = result(json!({
            "content": [{"type": "text", "text": "{\"sum\": 3}"}],
            "structuredContent": {"sum": 3}
        }));
        assert_eq!(output_of("s", r, 1 << 20), Ok(json!({"sum": 3})));
        assert_eq!(
            output_of("s", result(json!({"content": []})), 1 << 20),
            Ok(Value::Null)
        );
        let single = CallToolResult::success(vec![ContentBlock::text("hi")]);
        assert_eq!(output_of("s", single, 1 << 20), Ok(json!("hi")));
    }

    #[test]
    fn is_error_is_tool_failed_with_the_text_escaped_on_display() {
        let r = result(json!({
            "content": [{"type": "text", "text": "no such zone\n[INFO] forged"}],
            "isError": true
        }));
        let e = output_of("time", r, 1 << 20).unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::ToolFailed);
        assert_eq!(e.message, "no such zone\n[INFO] forged");
        assert_eq!(e.to_string(), r"tool_failed: no such zone\n[INFO] forged");
        let bare = result(json!({"content": [], "isError": true}));
        let e = output_of("time", bare, 1 << 20).unwrap_err();
        assert!(e.message.contains("`time`"), "{e}");
    }

    #[test]
    fn a_result_over_the_cap_is_output_too_large() {
        let r = result(json!({"content": [{"type": "text", "text": "x".repeat(5000)}]}));
        let e = output_of("big", r, 4096).unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::OutputTooLarge);
        assert!(e.message.contains("max_result_kb"), "{e}");
    }
}
