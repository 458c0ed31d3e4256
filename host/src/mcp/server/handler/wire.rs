//! Registry tools and call reports as MCP's model: a tool's listing, a
//! result and its content blocks.

use super::*;

/// A registry tool as MCP describes it: a stateful tool's schema gets its
/// optional session argument.
pub(super) fn mcp_tool(tool: &dyn crate::tools::Tool) -> Tool {
    let spec: &ToolSpec = tool.spec();
    let mut schema = match &spec.input_schema {
        Value::Object(map) => map.clone(),
        // MCP requires an object schema; the registry's are (it checks
        // them), but never send a client something it must reject.
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), Value::String("object".into()));
            map
        }
    };
    if let Some(arg) = session_arg(tool) {
        let properties = schema
            .entry("properties")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(properties) = properties {
            properties.insert(
                arg.to_owned(),
                serde_json::json!({
                    "type": "string",
                    "minLength": SESSION_KEY_LEN.start(),
                    "maxLength": SESSION_KEY_LEN.end(),
                    "pattern": "^[A-Za-z0-9._-]+$",
                    "description": "This tool keeps state between calls. To continue with \
                        the same state, pass the session handle an earlier result returned; \
                        leave it out to start afresh."
                }),
            );
        }
    }
    let mut listed = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    );
    if let Some(Value::Object(output)) = tool.output_schema() {
        listed.output_schema = Some(Arc::new(output.clone()));
    }
    if let Some(hints) = tool.annotations() {
        let mut annotations = rmcp::model::ToolAnnotations::default();
        annotations.title = hints.title.clone();
        annotations.read_only_hint = hints.read_only_hint;
        annotations.destructive_hint = hints.destructive_hint;
        annotations.idempotent_hint = hints.idempotent_hint;
        annotations.open_world_hint = hints.open_world_hint;
        listed.annotations = Some(annotations);
    }
    if let Some(uri) = tool.ui_resource() {
        listed.meta = Some(rmcp::model::MetaObject(apps_meta(uri)));
    }
    listed
}

/// The `_meta` key MCP Apps (`io.modelcontextprotocol/ui`) used before
/// `ui.resourceUri`, which hosts still read (`RESOURCE_URI_META_KEY` in
/// `@modelcontextprotocol/ext-apps`).
pub(in crate::mcp::server) const UI_LEGACY_META_KEY: &str = "ui/resourceUri";

/// A tool's `_meta` for MCP Apps: `ui.resourceUri`, and the legacy flat
/// key beside it, as the extension's own `registerAppTool` writes both.
fn apps_meta(uri: &str) -> JsonObject {
    let mut meta = JsonObject::new();
    meta.insert("ui".into(), serde_json::json!({ "resourceUri": uri }));
    meta.insert(UI_LEGACY_META_KEY.into(), Value::String(uri.to_owned()));
    meta
}

/// A tool's result as MCP carries it: the structured value as
/// `structuredContent` (when it is an object) and as text, for clients that
/// read text only; then each content part as its own block.
pub(super) fn mcp_result(report: CallReport) -> CallToolResult {
    let value = match report.output {
        // Exactly the text the tool loop sends a model: "kind: message",
        // control characters escaped.
        Err(e) => return CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        Ok(value) => value,
    };
    let mut result = match (report.structured, value) {
        // structuredContent must be an object; other outputs are text.
        (true, value @ Value::Object(_)) => {
            // What `CallToolResult::structured` makes, with the text
            // written the quick way.
            let mut result = CallToolResult::success(vec![ContentBlock::text(json_text(&value))]);
            result.structured_content = Some(value);
            result
        }
        (true, value) => CallToolResult::success(vec![ContentBlock::text(json_text(&value))]),
        // Content only: the parts are the whole answer.
        (false, _) => CallToolResult::success(Vec::new()),
    };
    result
        .content
        .extend(report.content.into_iter().map(content_block));
    result
}

/// A content part as MCP sends it.
pub(in crate::mcp::server) fn content_block(part: Content) -> ContentBlock {
    use base64::Engine as _;
    let base64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    match part {
        Content::Text { text } => ContentBlock::text(text),
        Content::Image { media_type, data } => ContentBlock::image(base64(&data), media_type),
        Content::Audio { media_type, data } => ContentBlock::audio(base64(&data), media_type),
        Content::Resource {
            uri,
            media_type,
            contents,
        } => {
            let contents = match contents {
                ResourceContents::Text(text) => {
                    rmcp::model::ResourceContents::TextResourceContents {
                        uri,
                        mime_type: media_type,
                        text,
                        meta: None,
                    }
                }
                ResourceContents::Blob(data) => {
                    rmcp::model::ResourceContents::BlobResourceContents {
                        uri,
                        mime_type: media_type,
                        blob: base64(&data),
                        meta: None,
                    }
                }
            };
            ContentBlock::resource(contents)
        }
    }
}
