//! A loaded plugin and its tools as [`Tool`]s.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::session;
use crate::sandbox::{CacheStatus, CallSinks, Limits, Permissions};
use crate::sandbox::{GuestContent, GuestOutput};
use crate::tools::{
    CallContext, Content, ResourceContents, SessionId, Tool, ToolAnnotations, ToolError,
    ToolErrorKind, ToolOrigin, ToolOutput, ToolSpec,
};

/// What a tool of a 0.2 plugin declares besides its [`ToolSpec`]: the
/// output schema, MCP annotations and metadata. All empty for a 0.1 plugin.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ToolExtras {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) annotations: Option<ToolAnnotations>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<Value>,
}

/// One loaded plugin: a compiled component, its limits and grants, its tools.
pub struct Plugin {
    pub(super) name: String,
    pub(super) path: PathBuf,
    pub(super) manifest_path: Option<PathBuf>,
    pub(super) digest: blake3::Hash,
    /// The SHA-256 of the manifest's bytes as loaded, if it has one.
    pub(super) manifest_sha256: Option<super::integrity::Sha256Digest>,
    pub(super) stateful: bool,
    pub(super) version: Option<String>,
    pub(super) exec: crate::tools::ExecOptions,
    /// Whether and how long its tools run as tasks (the manifest's `[task]`).
    pub(super) task: super::manifest::TaskSpec,
    pub(super) cache: CacheStatus,
    pub(super) tools: Vec<ToolSpec>,
    /// What each tool declared besides its spec (contract 0.2), by index.
    pub(super) extras: Vec<ToolExtras>,
    pub(super) tools_from_cache: bool,
    /// What it offers besides tools (contract 0.3), listed when it loaded;
    /// `None` for a plugin that exports none of 0.3's interfaces.
    pub(super) offers: Option<crate::sandbox::OfferLists>,
    /// Its tools' MCP Apps views: tool name to `ui://` URI (the manifest's
    /// `[ui]`, checked against its resources when it loaded).
    pub(super) ui: std::collections::BTreeMap<String, String>,
    pub(super) interface: ComponentInterface,
    /// Whether it imports `user` (contract 0.2): its calls may ask.
    pub(super) asks_user: bool,
    pub(super) sessions: session::Sessions,
    /// Made at load, or on the first call when the cache knew enough to
    /// load without it (see `lazy`).
    pub(super) guest: super::lazy::LazyGuest,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// The plugin's name: its file stem.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The `.wasm` file.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The manifest file, if there is one.
    pub fn manifest_path(&self) -> Option<&Path> {
        self.manifest_path.as_deref()
    }
    /// BLAKE3 digest of the component, hex.
    pub fn digest(&self) -> String {
        self.digest.to_hex().to_string()
    }
    /// Whether it keeps one instance per session.
    pub fn is_stateful(&self) -> bool {
        self.stateful
    }
    /// Its tools' version, from the manifest's `version`.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }
    /// How the registry runs its tools by default (the manifest's
    /// `[exec]`).
    pub fn exec_options(&self) -> &crate::tools::ExecOptions {
        &self.exec
    }
    /// Whether the compiled code came from the cache.
    pub fn cache_status(&self) -> CacheStatus {
        self.cache
    }
    /// Effective limits per call.
    pub fn limits(&self) -> &Limits {
        self.guest.limits()
    }
    /// Effective grants.
    pub fn permissions(&self) -> &Permissions {
        self.guest.permissions()
    }
    /// Whether the tool list came from the compile cache (remembered from
    /// an earlier load with the same component and manifest inputs) rather
    /// than from calling the component's `describe`.
    pub fn tools_from_cache(&self) -> bool {
        self.tools_from_cache
    }
    /// The tools it exports.
    pub fn tool_specs(&self) -> &[ToolSpec] {
        &self.tools
    }
    /// Whether its compiled code is loaded. A plugin whose file, compiled
    /// code and tools the compile cache knew loads without it, and loads it
    /// on its first call (or when its first call fails to, on the next).
    pub fn code_loaded(&self) -> bool {
        self.guest.is_ready()
    }
    /// The component's imports and exports by name.
    pub fn interface(&self) -> &ComponentInterface {
        &self.interface
    }

    /// Each tool as a [`Tool`] for a registry.
    pub fn tools(self: &Arc<Self>) -> Vec<WasmTool> {
        (0..self.tools.len())
            .map(|index| WasmTool {
                plugin: Arc::clone(self),
                index,
            })
            .collect()
    }

    /// Register each of its tools in `registry`, with its manifest's
    /// execution options, and put what it offers besides (contract 0.3)
    /// into the registry's offers ([`offers_into`](Self::offers_into));
    /// an offer the registry refuses is a warning in the log.
    ///
    /// # Errors
    ///
    /// A tool name already taken in `registry`; the tools before it stay.
    pub fn register_into(
        self: &Arc<Self>,
        registry: &crate::tools::ToolRegistry,
    ) -> Result<(), crate::tools::RegistryError> {
        for tool in self.tools() {
            registry.register_with(Arc::new(tool), self.exec_options().clone())?;
        }
        for error in self.offers_into(registry) {
            tracing::warn!(plugin = %self.name, "an offer of the plugin was refused: {error}");
        }
        Ok(())
    }

    /// Call tool `name` with `input` (JSON text) and return what it answered.
    /// Crate-internal: callers go through the [`ToolRegistry`](crate::tools::ToolRegistry),
    /// the one door that validates input first.
    ///
    /// Stateless plugins, and calls without a session, get a fresh instance.
    /// Stateful plugins keep one instance per session; calls within a
    /// session run one at a time.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] of the kind that ended the call.
    pub(crate) async fn call(
        &self,
        name: &str,
        input: &str,
        session: Option<&SessionId>,
        sinks: &CallSinks,
    ) -> Result<GuestOutput, ToolError> {
        let guest = self.guest.get().await?;
        match session {
            Some(session) if self.stateful => {
                self.sessions.call(guest, session, name, input, sinks).await
            }
            _ => guest.call_fresh(name, input, sinks).await,
        }
    }

    /// Drop the instance kept for `session`.
    pub fn end_session(&self, session: &SessionId) {
        self.sessions.end(session);
    }

    /// How many fresh instances are made and waiting for a call right now
    /// (see `HostConfig::spare_instances`).
    pub fn spare_instances(&self) -> usize {
        self.guest.spares_ready()
    }

    /// How many sessions hold an instance right now.
    pub fn live_sessions(&self) -> usize {
        self.sessions.len()
    }
}

/// A component's imports and exports by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ComponentInterface {
    /// Imported interfaces, e.g. `wasi:cli/environment@0.2.6`.
    pub imports: Vec<String>,
    /// Exported interfaces, e.g. `toolhost:plugin/tool@0.1.0`.
    pub exports: Vec<String>,
}

impl ComponentInterface {
    /// Whether the component imports the `user` interface (contract 0.2),
    /// so that its calls may ask the user questions.
    pub fn asks_user(&self) -> bool {
        self.imports
            .iter()
            .any(|i| i.starts_with("toolhost:plugin/user@"))
    }

    /// The names `component` imports and exports. Names come from the
    /// component: untrusted text, escaped where it is shown.
    pub(super) fn of(
        component: &wasmtime::component::Component,
        engine: &wasmtime::Engine,
    ) -> Self {
        let ty = component.component_type();
        Self {
            imports: ty.imports(engine).map(|(n, _)| n.to_owned()).collect(),
            exports: ty.exports(engine).map(|(n, _)| n.to_owned()).collect(),
        }
    }
}

/// One tool of a plugin, as a registry sees it.
#[derive(Debug, Clone)]
pub struct WasmTool {
    plugin: Arc<Plugin>,
    index: usize,
}

impl WasmTool {
    /// The plugin this tool belongs to.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }
}

impl Tool for WasmTool {
    fn spec(&self) -> &ToolSpec {
        &self.plugin.tools[self.index]
    }

    fn call(
        &self,
        input: Value,
        cx: &CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let plugin = Arc::clone(&self.plugin);
        let index = self.index;
        let session = cx.session.clone();
        let sinks = CallSinks::from(cx);
        Box::pin(async move {
            let name = &plugin.tools[index].name;
            let output = plugin
                .call(name, &input.to_string(), session.as_ref(), &sinks)
                .await?;
            let structured = match output.json {
                None => None,
                Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                    ToolError::new(
                        ToolErrorKind::InvalidOutput,
                        format!("tool `{name}` returned text that is not JSON ({e}); this is a bug in the plugin"),
                    )
                })?),
            };
            Ok(ToolOutput {
                structured,
                content: output.content.into_iter().map(content).collect(),
            })
        })
    }

    fn may_ask_user(&self) -> bool {
        self.plugin.asks_user
    }

    fn ui_resource(&self) -> Option<&str> {
        let name = &self.plugin.tools[self.index].name;
        self.plugin.ui.get(name).map(String::as_str)
    }

    fn output_schema(&self) -> Option<&Value> {
        self.plugin.extras.get(self.index)?.output_schema.as_ref()
    }

    fn annotations(&self) -> Option<&ToolAnnotations> {
        self.plugin.extras.get(self.index)?.annotations.as_ref()
    }

    fn origin(&self) -> ToolOrigin {
        self.plugin.origin()
    }

    fn version(&self) -> Option<&str> {
        self.plugin.version()
    }

    fn end_session(&self, session: &SessionId) {
        self.plugin.end_session(session);
    }

    fn is_stateful(&self) -> bool {
        self.plugin.is_stateful()
    }

    /// The loader compiled both schemas (`compile::tool_specs`,
    /// `check_extras`), on the component or before it wrote the note the
    /// catalog now reads them from.
    fn schemas_checked(&self) -> bool {
        true
    }

    fn task_support(&self) -> crate::tasks::TaskSupport {
        self.plugin.task.support
    }

    fn task_deadline_secs(&self) -> Option<u64> {
        self.plugin.task.deadline_secs
    }
}

fn content(part: GuestContent) -> Content {
    match part {
        GuestContent::Text(text) => Content::Text { text },
        GuestContent::Image { media_type, data } => Content::Image { media_type, data },
        GuestContent::Audio { media_type, data } => Content::Audio { media_type, data },
        GuestContent::Resource {
            uri,
            media_type,
            text,
            blob,
        } => Content::Resource {
            uri,
            media_type,
            contents: match (text, blob) {
                (Some(text), _) => ResourceContents::Text(text),
                (None, blob) => ResourceContents::Blob(blob.unwrap_or_default()),
            },
        },
    }
}
