//! Doors for the fuzz targets (`host/fuzz`, docs/security.md "Fuzzing")
//! to the decoders of untrusted input that have no public entry point of
//! their own: each function here hands its input to the one the library
//! uses, and nothing else. Not a stable API: hidden from the docs, and it
//! changes whenever a decoder does.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

use crate::plugin::PluginError;
use crate::sandbox::{GuestAnnotations, GuestTool};
use crate::tools::{PluginBudget, ToolError, ToolOutput, ToolSpec};

/// Run `future` to its end on this thread's runtime (one per thread,
/// made once: the targets run thousands of inputs a second).
pub fn block_on<F: Future>(future: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime builds");
    }
    RUNTIME.with(|runtime| runtime.block_on(future))
}

/// The events of a server-sent event stream that arrives in `chunks`
/// (`(event, data)` each), parsed as every provider's stream is, holding at
/// most `max_event` bytes of one event; `None` when one grows past it.
pub fn sse_events(max_event: usize, chunks: &[&[u8]]) -> Option<Vec<(String, String)>> {
    let mut parser = crate::llm::sse::SseParser::new(max_event);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(parser.push(chunk).ok()?);
    }
    events.extend(parser.finish());
    Some(events.into_iter().map(|e| (e.event, e.data)).collect())
}

/// What a stdio MCP server's `stdout`, arriving in `chunks`, becomes
/// before rmcp reads it: its lines held to `cap` bytes (see
/// `mcp/frames.rs`).
pub fn mcp_stdout_lines(chunks: Vec<Vec<u8>>, cap: usize) -> Vec<u8> {
    block_on(async move {
        let stdout = Chunks(chunks.into_iter().filter(|c| !c.is_empty()).rev().collect());
        let mut lines = crate::mcp::frames::cap_lines(stdout, cap, "fuzz".to_owned());
        let mut out = Vec::new();
        lines
            .read_to_end(&mut out)
            .await
            .expect("an in-memory pipe reads");
        out
    })
}

/// The size and the cap that a JSON-RPC `error` object says an over-cap
/// message had, when it is the error [`mcp_stdout_lines`] put in its place.
pub fn mcp_too_large(error: &Value) -> Option<(u64, u64)> {
    let error = serde_json::from_value::<rmcp::model::ErrorData>(error.clone()).ok()?;
    crate::mcp::frames::too_large(&error).map(|t| (t.bytes, t.cap))
}

/// An MCP server's `tools/call` result (its JSON `result`) as the
/// tool's output, at most `max_bytes`; `None` when it is not a
/// `CallToolResult` at all (rmcp refuses it before the library sees it).
pub fn mcp_call_result(result: &[u8], max_bytes: usize) -> Option<Result<ToolOutput, ToolError>> {
    let result = serde_json::from_slice::<rmcp::model::CallToolResult>(result).ok()?;
    Some(crate::mcp::source::output::output_of(
        "fuzz", result, max_bytes,
    ))
}

/// The most bytes of a `requestState` a retried MCP call may carry.
#[cfg(feature = "server")]
pub const MAX_REQUEST_STATE: usize = crate::mcp::server::question::MAX_REQUEST_STATE;

/// A retried MCP call's `requestState` read as `serve` reads it, and
/// written back as `serve` would send it on.
///
/// # Errors
///
/// What `serve` answers a `requestState` it did not send.
#[cfg(feature = "server")]
pub fn request_state(state: &str) -> Result<String, String> {
    crate::mcp::server::question::RequestState::parse(Some(state)).map(|mut s| s.encode())
}

/// One tool of a plugin's `describe()` answer, as the component hands it
/// over (the WIT record, in JSON for the fuzzer).
#[derive(Debug, Deserialize)]
struct Described {
    name: String,
    description: String,
    input_schema: String,
    #[serde(default)]
    output_schema: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    destructive: Option<bool>,
    #[serde(default)]
    idempotent: Option<bool>,
    #[serde(default)]
    open_world: Option<bool>,
    #[serde(default)]
    meta: Option<String>,
}

/// A plugin's `describe()` answer (a JSON list of the WIT `tool-info`
/// records) checked as a plugin's load checks it, within `budget`; `None`
/// when `answer` is not such a list.
pub fn describe(
    answer: &[u8],
    budget: &PluginBudget,
) -> Option<Result<Vec<ToolSpec>, PluginError>> {
    let tools = serde_json::from_slice::<Vec<Described>>(answer).ok()?;
    let infos = tools
        .into_iter()
        .map(|t| GuestTool {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            output_schema: t.output_schema,
            annotations: GuestAnnotations {
                title: t.title,
                read_only: t.read_only,
                destructive: t.destructive,
                idempotent: t.idempotent,
                open_world: t.open_world,
            },
            meta: t.meta,
        })
        .collect();
    let checked = crate::plugin::compile::check_described(infos, Path::new("fuzz.wasm"), budget);
    Some(checked.map(|(specs, _)| specs))
}

/// The layers (component, manifest, signature: each `(media type,
/// digest, size)`) that `pull` takes from an OCI manifest of `raw`
/// bytes.
///
/// # Errors
///
/// Why `pull` refuses the manifest.
pub fn oci_manifest(raw: &[u8]) -> Result<OciLayers, crate::oci::OciError> {
    use crate::oci::{MAX_MANIFEST_BYTES, OciError};
    if raw.len() > MAX_MANIFEST_BYTES {
        return Err(OciError::TooLarge {
            reference: "fuzz".into(),
            what: "its OCI manifest".into(),
            size: raw.len() as u64,
            max: MAX_MANIFEST_BYTES as u64,
            key: None,
        });
    }
    let manifest = serde_json::from_slice(raw).map_err(|e| OciError::Layout {
        reference: "fuzz".into(),
        message: e.to_string(),
    })?;
    let layers = crate::oci::layout::plugin_layers("fuzz", &manifest)?;
    let layer =
        |d: &oci_client::manifest::OciDescriptor| (d.media_type.clone(), d.digest.clone(), d.size);
    Ok(OciLayers {
        component: layer(&layers.component),
        manifest: layers.manifest.as_ref().map(layer),
        signature: layers.signature.as_ref().map(layer),
    })
}

/// The layers of a plugin's OCI manifest: `(media type, digest, size)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciLayers {
    /// The component.
    pub component: (String, String, i64),
    /// The plugin's manifest (`NAME.toml`), if pushed.
    pub manifest: Option<(String, String, i64)>,
    /// The plugin's signature, if pushed.
    pub signature: Option<(String, String, i64)>,
}

/// Bytes that arrive in the given pieces, one `read` each.
struct Chunks(Vec<Vec<u8>>);

impl AsyncRead for Chunks {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let Some(mut chunk) = self.0.pop() else {
            return Poll::Ready(Ok(()));
        };
        let n = chunk.len().min(buf.remaining());
        buf.put_slice(&chunk[..n]);
        if n < chunk.len() {
            self.0.push(chunk.split_off(n));
        }
        Poll::Ready(Ok(()))
    }
}
