//! A `tools/call` result as a tool's output or [`ToolError`].

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use crate::tools::{Content, ResourceContents as TextOrBlob, ToolError, ToolErrorKind, ToolOutput};

/// The output of a call to `server`'s tool, all of it: the structured
/// value is `structuredContent` if the result has it, else, when every
/// block is text, the text blocks joined by newlines as one JSON string
/// (`null` for no blocks); a result with any other block (an image, audio,
/// an embedded resource, a resource link) also carries its blocks as
/// content parts, in order, so that an upstream's image reaches the model
/// and an MCP client of `serve` as a plugin's does (text blocks left out
/// when `structuredContent` is there: they restate it). `isError: true` is
/// `tool_failed` with the text. A result larger than `max_bytes` (as JSON
/// text) is `output_too_large`.
pub(crate) fn output_of(
    server: &str,
    result: CallToolResult,
    max_bytes: usize,
) -> Result<ToolOutput, ToolError> {
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
                ContentBlock::Image(_) => "[image]".to_owned(),
                ContentBlock::Audio(_) => "[audio]".to_owned(),
                ContentBlock::Resource(_) => "[embedded resource]".to_owned(),
                ContentBlock::ResourceLink(_) => "[resource link]".to_owned(),
                _ => "[content]".to_owned(),
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
    let only_text = result
        .content
        .iter()
        .all(|block| matches!(block, ContentBlock::Text(_)));
    if only_text {
        let structured = match result.structured_content {
            Some(structured) => structured,
            None if result.content.is_empty() => Value::Null,
            None => Value::String(text()),
        };
        return Ok(ToolOutput::from(structured));
    }
    let restated = result.structured_content.is_some();
    let mut content = Vec::with_capacity(result.content.len());
    for block in result.content {
        match block {
            ContentBlock::Text(_) if restated => {}
            block => content.push(part(server, block)?),
        }
    }
    Ok(ToolOutput {
        structured: result.structured_content,
        content,
    })
}

/// One block of a result as a content part.
pub(super) fn part(server: &str, block: ContentBlock) -> Result<Content, ToolError> {
    use base64::Engine as _;
    let bytes = |data: &str, what: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| {
                ToolError::failed(format!(
                    "MCP server `{server}` answered with {what} whose data is not base64 ({e})"
                ))
            })
    };
    Ok(match block {
        ContentBlock::Text(t) => Content::Text { text: t.text },
        ContentBlock::Image(image) => Content::Image {
            data: bytes(&image.data, "an image")?,
            media_type: image.mime_type,
        },
        ContentBlock::Audio(audio) => Content::Audio {
            data: bytes(&audio.data, "audio")?,
            media_type: audio.mime_type,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Content::Resource {
                uri,
                media_type: mime_type,
                contents: TextOrBlob::Text(text),
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Content::Resource {
                contents: TextOrBlob::Blob(bytes(&blob, "an embedded resource")?),
                uri,
                media_type: mime_type,
            },
            other => Content::Text {
                text: serde_json::to_string(&other).unwrap_or_default(),
            },
        },
        // A link names a resource without its contents: the reader is told
        // where it is.
        ContentBlock::ResourceLink(link) => Content::Text {
            text: format!("resource: {} ({})", link.name, link.uri),
        },
        other => Content::Text {
            text: serde_json::to_string(&other).unwrap_or_default(),
        },
    })
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
            {"type": "text", "text": "two"}
        ]}));
        assert_eq!(output_of("s", r, 1 << 20), Ok(json!("one\ntwo").into()));
        let r = result(json!({
            "content": [{"type": "text", "text": "{\"sum\": 3}"}],
            "structuredContent": {"sum": 3}
        }));
        assert_eq!(output_of("s", r, 1 << 20), Ok(json!({"sum": 3}).into()));
        assert_eq!(
            output_of("s", result(json!({"content": []})), 1 << 20),
            Ok(Value::Null.into())
        );
        let single = CallToolResult::success(vec![ContentBlock::text("hi")]);
        assert_eq!(output_of("s", single, 1 << 20), Ok(json!("hi").into()));
    }

    #[test]
    fn images_audio_and_resources_are_content_parts_in_order() {
        // "PNG" and "RIFF" in base64.
        let r = result(json!({"content": [
            {"type": "text", "text": "here it is:"},
            {"type": "image", "data": "UE5H", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAE="}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"}
        ]}));
        let output = output_of("s", r, 1 << 20).unwrap();
        assert_eq!(output.structured, None);
        assert_eq!(
            output.content,
            [
                Content::Text {
                    text: "here it is:".into()
                },
                Content::Image {
                    media_type: "image/png".into(),
                    data: b"PNG".to_vec()
                },
                Content::Audio {
                    media_type: "audio/wav".into(),
                    data: b"RIFF".to_vec()
                },
                Content::Resource {
                    uri: "file:///a.txt".into(),
                    media_type: Some("text/plain".into()),
                    contents: TextOrBlob::Text("A".into())
                },
                Content::Resource {
                    uri: "file:///b.bin".into(),
                    media_type: None,
                    contents: TextOrBlob::Blob(vec![0, 1])
                },
                Content::Text {
                    text: "resource: c (file:///c)".into()
                },
            ]
        );
        // A JSON-only reader is told what the parts are.
        assert_eq!(output.to_json()["content"][1]["type"], "image");
    }

    #[test]
    fn structured_content_keeps_its_image_and_drops_the_text_restating_it() {
        let r = result(json!({
            "content": [
                {"type": "text", "text": "{\"n\": 1}"},
                {"type": "image", "data": "UE5H", "mimeType": "image/png"}
            ],
            "structuredContent": {"n": 1}
        }));
        let output = output_of("s", r, 1 << 20).unwrap();
        assert_eq!(output.structured, Some(json!({"n": 1})));
        assert_eq!(
            output.content,
            [Content::Image {
                media_type: "image/png".into(),
                data: b"PNG".to_vec()
            }]
        );
    }

    #[test]
    fn an_image_that_is_not_base64_is_tool_failed_naming_the_server() {
        let r = result(json!({"content": [
            {"type": "image", "data": "not base64!", "mimeType": "image/png"}
        ]}));
        let e = output_of("pics", r, 1 << 20).unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::ToolFailed);
        assert!(
            e.message.contains("`pics`") && e.message.contains("base64"),
            "{e}"
        );
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
