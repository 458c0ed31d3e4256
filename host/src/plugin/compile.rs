//! Reading, checking and compiling a component, and asking it for its
//! tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use wasmtime::component::Component;

use super::integrity::{Integrity, ManifestState};
use super::loaded::ToolExtras;
use super::{LoadEvent, LoadObserver, PluginError, PluginHost, plugin_name};
use crate::fsread::read_regular;
use crate::sandbox::{CacheStatus, FileStamp, Guest, GuestTool, Sandbox, SandboxError};
use crate::text;
use crate::tools::{
    PluginBudget, SchemaBudget, ToolAnnotations, ToolSpec, check_schema, check_tools,
};

/// A component file read, hashed, and compiled or loaded from the cache.
pub(super) struct Compiled {
    pub(super) digest: blake3::Hash,
    /// Where its compiled code is cached; `None` when caching is off.
    pub(super) cache_entry: Option<PathBuf>,
    /// Whether the cache held it before this load.
    pub(super) cached_before: bool,
    /// The component, or why it is not one this host can load.
    pub(super) result: Result<(Component, CacheStatus), SandboxError>,
}

impl PluginHost {
    /// Read the component at `path`, check those bytes against the
    /// integrity policy (with what is known of its `manifest`), hash them
    /// and compile them (or load them from the cache). Only reading or
    /// refusing it is an `Err` here; whether it compiled is in
    /// [`Compiled::result`].
    pub(super) async fn compile_file(
        &self,
        path: &Path,
        manifest: ManifestState,
    ) -> Result<Compiled, PluginError> {
        // Reading, hashing and loading (or compiling) the component all
        // block, so they run off the executor, in one hop.
        let job = CompileJob {
            file: path.to_owned(),
            plugin: plugin_name(path),
            manifest,
            budget: self.config.plugins,
            sandbox: self.sandbox.clone(),
            observer: self.observer.clone(),
            integrity: self.integrity.clone(),
        };
        let compiled = tokio::task::spawn_blocking(move || job.run()).await;
        compiled.map_err(|e| PluginError::Describe {
            path: path.to_owned(),
            message: format!("the compiler thread failed: {e}"),
        })?
    }
}

/// What compiling one component file takes, moved to a blocking thread.
struct CompileJob {
    file: PathBuf,
    plugin: String,
    manifest: ManifestState,
    budget: PluginBudget,
    sandbox: Sandbox,
    observer: Option<LoadObserver>,
    integrity: Arc<Integrity>,
}

impl CompileJob {
    /// Read, check, hash and compile the file (blocking), or take its
    /// compiled code from the cache when it is unchanged.
    fn run(self) -> Result<Compiled, PluginError> {
        let max = self.budget.max_component_mb.saturating_mul(1 << 20);
        // Taken before the read: what the file was when its bytes were hashed.
        let stamp = FileStamp::of(&self.file);
        let known = stamp
            .as_ref()
            .and_then(|stamp| self.sandbox.known_digest(&self.file, stamp));
        // An unchanged file whose compiled code is cached is neither
        // read nor hashed again, unless the integrity policy has bytes
        // to check.
        if let (Some(stamp), Some(digest)) = (&stamp, known)
            && stamp.size() <= max
            && !self.integrity.needs_bytes(self.manifest)
            && let Some(component) = self.sandbox.cached(&digest)
        {
            return Ok(Compiled {
                digest,
                cache_entry: self.sandbox.cache_entry(&digest),
                cached_before: true,
                result: Ok((component, CacheStatus::Hit)),
            });
        }
        let wasm = read_regular(&self.file, max, "plugins.max_component_mb").map_err(|error| {
            PluginError::Read {
                path: self.file.clone(),
                error,
            }
        })?;
        // These bytes, and no second read of the file, are what is
        // checked and then compiled; a refused component is not compiled.
        self.integrity
            .check(
                &self.file,
                &wasm,
                self.manifest,
                self.budget.max_manifest_bytes,
            )
            .map_err(|error| PluginError::Integrity {
                path: self.file.clone(),
                error: Box::new(error),
            })?;
        let digest = Sandbox::digest(&wasm);
        if let Some(stamp) = &stamp
            && known != Some(digest)
        {
            self.sandbox.remember_digest(&self.file, stamp, &digest);
        }
        Ok(self.compile(&wasm, digest))
    }

    /// Compile `wasm` (or load it from the cache), telling the observer
    /// when it is compiled afresh and how long that took.
    fn compile(self, wasm: &[u8], digest: blake3::Hash) -> Compiled {
        let cache_entry = self.sandbox.cache_entry(&digest);
        let cached_before = cache_entry.as_ref().is_some_and(|entry| entry.exists());
        let started = std::time::Instant::now();
        if !cached_before {
            let event = LoadEvent::Compiling {
                plugin: self.plugin.clone(),
                bytes: wasm.len(),
            };
            emit(self.observer.as_ref(), event);
        }
        let result = self.sandbox.compile(wasm, &digest);
        if !cached_before {
            let elapsed = started.elapsed();
            let plugin = self.plugin;
            emit(
                self.observer.as_ref(),
                LoadEvent::Compiled { plugin, elapsed },
            );
        }
        Compiled {
            digest,
            cache_entry,
            cached_before,
            result,
        }
    }
}

/// Tell `observer` (or the log, without one) about a load's progress.
fn emit(observer: Option<&LoadObserver>, event: LoadEvent) {
    match observer {
        Some(observer) => observer(&event),
        None => {
            if let LoadEvent::Compiling { plugin, bytes } = &event {
                tracing::info!(
                    plugin,
                    size_kib = bytes >> 10,
                    "compiling plugin (done once, then cached)"
                );
            }
        }
    }
}

/// Ask the component for its tools and check each one: its spec, and what
/// a 0.2 component declares besides (by index).
pub(super) async fn describe(
    guest: &Guest,
    path: &Path,
    budget: &PluginBudget,
) -> Result<(Vec<ToolSpec>, Vec<ToolExtras>), PluginError> {
    let bad = |message: String| PluginError::Describe {
        path: path.to_owned(),
        message,
    };
    let infos = guest
        .describe()
        .await
        .map_err(|e| bad(format!("describe() failed: {e}")))?;
    check_described(infos, path, budget)
}

/// Check what a component's `describe()` answered: each tool's spec, and
/// what a 0.2 component declares besides (by index). The answer is the
/// plugin's: everything in it is held to `budget` before it is parsed.
pub(crate) fn check_described(
    infos: Vec<GuestTool>,
    path: &Path,
    budget: &PluginBudget,
) -> Result<(Vec<ToolSpec>, Vec<ToolExtras>), PluginError> {
    let bad = |message: String| PluginError::Describe {
        path: path.to_owned(),
        message,
    };
    if infos.len() > budget.max_tools {
        // Say so before converting anything.
        return Err(bad(format!(
            "describe() lists {} tools, more than the {} allowed; split the plugin, or raise `plugins.max_tools` in the host config",
            infos.len(),
            budget.max_tools
        )));
    }
    let mut specs: Vec<ToolSpec> = Vec::with_capacity(infos.len());
    let mut extras: Vec<ToolExtras> = Vec::with_capacity(infos.len());
    for info in infos {
        let shown = text::untrusted(&info.name, 80);
        extras.push(check_extras(&info, &shown, budget).map_err(&bad)?);
        if info.input_schema.len() > budget.max_schema_bytes {
            return Err(bad(format!(
                "tool `{shown}`: the input schema is {} bytes, more than the {} allowed; simplify it, or raise `plugins.max_schema_bytes`",
                info.input_schema.len(),
                budget.max_schema_bytes
            )));
        }
        let schema: Value = serde_json::from_str(&info.input_schema)
            .map_err(|e| bad(format!("tool `{shown}`: input schema is not JSON: {e}")))?;
        specs.push(ToolSpec {
            name: info.name,
            description: info.description,
            input_schema: schema,
        });
    }
    check_tools(&specs, budget).map_err(bad)?;
    for spec in &specs {
        // Within budget, so compiling it is bounded work.
        if let Err(e) = jsonschema::validator_for(&spec.input_schema) {
            return Err(bad(format!(
                "tool `{}`: input schema is not a valid JSON Schema: {}",
                spec.name,
                text::untrusted(&e.to_string(), 512)
            )));
        }
    }
    Ok((specs, extras))
}

/// Most bytes of a tool's title (an annotation).
const MAX_TITLE_BYTES: usize = 256;

/// A 0.2 tool's output schema, annotations and metadata, checked: the
/// schema within the schema budget, JSON, a valid JSON Schema whose root is
/// an object schema (what MCP's `outputSchema` must be); the title within
/// its budget; the metadata a JSON object within the schema budget.
pub(super) fn check_extras(
    info: &GuestTool,
    shown: &str,
    budget: &PluginBudget,
) -> Result<ToolExtras, String> {
    let output_schema = match &info.output_schema {
        None => None,
        Some(text) => {
            if text.len() > budget.max_schema_bytes {
                return Err(format!(
                    "tool `{shown}`: the output schema is {} bytes, more than the {} allowed; simplify it, or raise `plugins.max_schema_bytes`",
                    text.len(),
                    budget.max_schema_bytes
                ));
            }
            let schema: Value = serde_json::from_str(text)
                .map_err(|e| format!("tool `{shown}`: output schema is not JSON: {e}"))?;
            if schema.get("type") != Some(&Value::from("object")) {
                return Err(format!(
                    "tool `{shown}`: the output schema's root must be an object schema (`\"type\": \"object\"`), as MCP requires"
                ));
            }
            // The structure budget before the compiler, which recurses (a
            // long `$ref` chain once overflowed its stack).
            check_schema(&schema, &SchemaBudget::default())
                .map_err(|e| format!("tool `{shown}`: output schema: {e}"))?;
            if let Err(e) = jsonschema::validator_for(&schema) {
                return Err(format!(
                    "tool `{shown}`: output schema is not a valid JSON Schema: {}",
                    text::untrusted(&e.to_string(), 512)
                ));
            }
            Some(schema)
        }
    };
    let a = &info.annotations;
    if a.title.as_ref().is_some_and(|t| t.len() > MAX_TITLE_BYTES) {
        return Err(format!(
            "tool `{shown}`: the title is longer than {MAX_TITLE_BYTES} bytes; shorten it"
        ));
    }
    let annotations = ToolAnnotations {
        title: a.title.clone(),
        read_only_hint: a.read_only,
        destructive_hint: a.destructive,
        idempotent_hint: a.idempotent,
        open_world_hint: a.open_world,
    };
    let meta = match &info.meta {
        None => None,
        Some(text) => {
            if text.len() > budget.max_schema_bytes {
                return Err(format!(
                    "tool `{shown}`: the metadata is {} bytes, more than the {} allowed",
                    text.len(),
                    budget.max_schema_bytes
                ));
            }
            match serde_json::from_str::<Value>(text) {
                Ok(value @ Value::Object(_)) => Some(value),
                _ => return Err(format!("tool `{shown}`: the metadata is not a JSON object")),
            }
        }
    };
    Ok(ToolExtras {
        output_schema,
        annotations: (!annotations.is_empty()).then_some(annotations),
        meta,
    })
}
