//! [`ToolRegistry`]: every tool by name (and version), input validation,
//! timeout, retries; [`ToolSet`]: one consistent snapshot of it.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::watch;

use super::log::CallLog;
use super::options::ExecOptions;
use super::schema::{InputBudget, SchemaBudget, check_schema};
use super::{CallContext, SessionId, Tool, ToolOrigin};

mod call;
mod error;
mod names;
mod observe;
mod set;

pub use call::{CallInput, CallReport};
pub use error::RegistryError;
use error::describe_origin;
pub use names::is_valid_version;
use names::{insert, same_tools};

pub use observe::Observability;
pub use set::ToolSet;
use set::{Entry, Validators};

/// All tools by name (and version). Validates input and applies
/// [`ExecOptions`].
///
/// Where two sources offer one name, the name belongs to the source that
/// takes precedence, by a fixed order (native tools, plugins by file path,
/// REST tools, MCP servers by name), whichever registered first: a
/// stronger source's tool displaces a weaker one's
/// ([`RegistryError::Displaced`]), and a weaker one's is refused
/// ([`RegistryError::DuplicateName`]). So a plugin removed and put back
/// takes its names back from an MCP server that listed them meanwhile.
/// A name freed by its owner goes to a weaker source when that source
/// next registers it (an MCP server does on its next listing).
///
/// Tools can be registered and unregistered at any time, also while calls
/// run: every method takes `&self`, so an `Arc<ToolRegistry>` is shared
/// with the [`ToolRunner`](crate::runner::ToolRunner) and changed from
/// outside it. Each change publishes a new [`ToolSet`]; a reader takes one
/// with [`snapshot`](Self::snapshot) and keeps a consistent view for as long
/// as it holds it (the runner takes one per model request).
///
/// Every change to the tool set is announced on a change feed,
/// [`changes`](Self::changes), whatever made it: a program's
/// `register`, a plugin reload, an MCP server whose tool list changed.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolhost::tools::{CallContext, NativeTool, ToolRegistry};
///
/// # tokio_test_block_on(async {
/// let registry = ToolRegistry::new();
/// registry.register(NativeTool::new(
///     "echo",
///     "Returns its input.",
///     json!({"type": "object"}),
///     |input| async move { Ok(input) },
/// ))?;
/// // JSON text, as a model writes it, or a value.
/// let report = registry.call("echo", r#"{"a":1}"#, &CallContext::default()).await;
/// assert_eq!(report.output, Ok(json!({"a": 1})));
/// let report = registry.call("echo", json!({"b": 2}), &CallContext::default()).await;
/// assert_eq!(report.output, Ok(json!({"b": 2})));
///
/// // Two versions of one name: the plain name is the one registered last.
/// let v = |version: &'static str| {
///     NativeTool::new("calc", "Calculates.", json!({"type": "object"}), move |_| async move {
///         Ok(json!(version))
///     })
///     .with_version(version)
/// };
/// registry.register(v("1.0.0"))?;
/// registry.register(v("2.0.0"))?;
/// let cx = CallContext::default();
/// assert_eq!(registry.call("calc", "{}", &cx).await.output, Ok(json!("2.0.0")));
/// assert_eq!(registry.call("calc@1.0.0", "{}", &cx).await.output, Ok(json!("1.0.0")));
/// # Ok::<_, toolhost::tools::RegistryError>(())
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
pub struct ToolRegistry {
    // A lock around an `Arc` rather than an `arc-swap`: a reader holds the
    // read lock only to clone the `Arc`, writers are rare (registration,
    // hot reload) and build the next set with the lock held only for the
    // swap's checks, and the crate needs no new dependency for it.
    current: RwLock<Arc<ToolSet>>,
    schema_budget: SchemaBudget,
    /// The generation of the tool set: bumped on every change to it.
    generation: watch::Sender<u64>,
    /// Resources, templates and prompts, beside the tools.
    offers: super::Offers,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::with_budgets(SchemaBudget::default(), InputBudget::default())
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.snapshot().keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry with the default [`SchemaBudget`] and
    /// [`InputBudget`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty registry with other budgets for schemas (checked when a
    /// tool is registered) and inputs (checked before every call).
    pub fn with_budgets(schema: SchemaBudget, input: InputBudget) -> Self {
        Self {
            current: RwLock::new(Arc::new(ToolSet::empty(input, Observability::default()))),
            schema_budget: schema,
            generation: watch::Sender::new(0),
            offers: super::Offers::default(),
        }
    }

    /// The resources, resource templates and prompts this registry holds
    /// beside its tools, with their own change feeds (see [`Offers`](super::Offers)).
    pub fn offers(&self) -> &super::Offers {
        &self.offers
    }

    /// The change feed: a receiver of the tool set's generation, a number
    /// that goes up on every change to the tools (a tool registered,
    /// replaced or removed, by anyone), never for options or the call log.
    ///
    /// A watch channel rather than a stream of events: a burst of changes
    /// (a reload of many plugins, an MCP server re-listing its tools) may
    /// be seen as one, but a change is never missed, and a slow reader
    /// costs nothing. Read the tools themselves with
    /// [`snapshot`](Self::snapshot) after a change.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use toolhost::tools::{NativeTool, ToolRegistry};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let registry = ToolRegistry::new();
    /// let mut changes = registry.changes();
    /// registry.register(NativeTool::new("echo", "Echoes.", json!({"type": "object"}), |input| async move {
    ///     Ok(input)
    /// }))?;
    /// changes.changed().await.expect("the registry is alive");
    /// assert!(registry.snapshot().contains("echo"));
    /// # Ok::<_, toolhost::tools::RegistryError>(())
    /// # }).unwrap();
    /// ```
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// The tool set's generation now (see [`changes`](Self::changes)).
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// The tools as they are now. Later changes to the registry do not
    /// change it.
    pub fn snapshot(&self) -> Arc<ToolSet> {
        // A poisoned lock still holds a whole set: the only writes are
        // swaps of a complete `Arc`.
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Publish the set `change` makes from the current one; `change` sees
    /// the current set and returns the next tools, or an error that leaves
    /// the registry as it was.
    fn update<T>(
        &self,
        change: impl FnOnce(&ToolSet) -> Result<(BTreeMap<String, Vec<Arc<Entry>>>, T), RegistryError>,
    ) -> Result<T, RegistryError> {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let (tools, value) = change(&current)?;
        let changed = !same_tools(&current.tools, &tools);
        *current = Arc::new(ToolSet {
            tools,
            input_budget: current.input_budget,
            observe: current.observe.clone(),
            // The same tools keep their index; any change builds a new one.
            index: if changed {
                std::sync::OnceLock::new()
            } else {
                current.index.clone()
            },
        });
        // Bumped with the lock still held: a reader woken by the feed
        // takes a snapshot that has the change.
        if changed {
            self.generation.send_modify(|generation| *generation += 1);
        }
        Ok(value)
    }

    /// The same registry, recording its calls as `observability` says
    /// (a call log, metrics, how `execute_tool` spans are made). What a
    /// registry records is given here, before it is shared, and stays the
    /// same for its life.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolhost::telemetry::Metrics;
    /// use toolhost::tools::{Observability, ToolRegistry};
    ///
    /// let metrics = Metrics::new();
    /// let registry = ToolRegistry::new().observed(Observability::new().metrics(metrics.clone()));
    /// assert!(registry.metrics().is_some());
    /// ```
    #[must_use]
    pub fn observed(self, observability: Observability) -> Self {
        {
            let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
            *current = Arc::new(ToolSet {
                tools: current.tools.clone(),
                input_budget: current.input_budget,
                observe: observability,
                index: std::sync::OnceLock::new(),
            });
        }
        self
    }

    /// What the registry records about its calls.
    pub fn observability(&self) -> Observability {
        self.snapshot().observe.clone()
    }

    /// The metrics calls are counted in, if any.
    pub fn metrics(&self) -> Option<crate::telemetry::Metrics> {
        self.snapshot().observe.metrics.clone()
    }

    /// The call log, if calls are being recorded.
    pub fn log(&self) -> Option<Arc<CallLog>> {
        self.snapshot().observe.log.clone()
    }

    /// Add `tool` with default [`ExecOptions`].
    ///
    /// # Errors
    ///
    /// As [`register_with`](Self::register_with).
    pub fn register(&self, tool: impl Tool) -> Result<(), RegistryError> {
        self.register_with(Arc::new(tool), ExecOptions::default())
    }

    /// Add a shared `tool` with `options` (the tool's defaults, which a run
    /// or a call may override).
    ///
    /// A name may be registered twice only when both tools have versions
    /// ([`Tool::version`]) and they differ; the plain name then resolves to
    /// the one registered last.
    ///
    /// # Errors
    ///
    /// The name is taken (by a tool without a version, or by the same
    /// version: [`RegistryError::DuplicateName`] names both origins), the
    /// name or version is invalid, or the input schema does not compile.
    pub fn register_with(
        &self,
        tool: Arc<dyn Tool>,
        options: ExecOptions,
    ) -> Result<(), RegistryError> {
        let entry = self.entry(tool, options)?;
        let displaced = self.update(|set| {
            let mut tools = set.tools.clone();
            let mut displaced = Vec::new();
            insert(&mut tools, entry, &mut displaced)?;
            Ok((tools, displaced))
        })?;
        for lost in &displaced {
            tracing::warn!("{}", crate::text::escape_controls(&lost.to_string()));
        }
        Ok(())
    }

    /// Swap tools in one step: remove every tool in `old` (the very
    /// `Arc`s that were registered, compared by address) and add `new`.
    /// A reader sees the set before or the set after, never a mix; calls
    /// already running on an old tool finish on it. This is how a plugin
    /// reload replaces exactly the tools that plugin registered, whatever
    /// else the registry holds.
    ///
    /// Returns the tools of other sources that `new` displaced (each a
    /// [`RegistryError::Displaced`]): they ranked below it.
    ///
    /// # Errors
    ///
    /// As [`register_with`](Self::register_with), for any tool in `new`
    /// (a name taken by a tool not in `old` that takes precedence, an
    /// invalid name, version or schema); the registry is then left as it
    /// was.
    pub fn replace(
        &self,
        old: &[Arc<dyn Tool>],
        new: Vec<(Arc<dyn Tool>, ExecOptions)>,
    ) -> Result<Vec<RegistryError>, RegistryError> {
        let entries = new
            .into_iter()
            .map(|(tool, options)| self.entry(tool, options))
            .collect::<Result<Vec<_>, _>>()?;
        self.update(|set| {
            let mut tools = set.tools.clone();
            tools.retain(|_, versions| {
                versions.retain(|e| !old.iter().any(|o| Arc::ptr_eq(o, &e.tool)));
                !versions.is_empty()
            });
            let mut displaced = Vec::new();
            for entry in entries {
                insert(&mut tools, entry, &mut displaced)?;
            }
            Ok((tools, displaced))
        })
    }

    /// A checked registry entry for `tool`: name, version and schema
    /// within their rules, the schema compiled. Done before any lock is
    /// taken.
    fn entry(
        &self,
        tool: Arc<dyn Tool>,
        options: ExecOptions,
    ) -> Result<Arc<Entry>, RegistryError> {
        let spec = tool.spec();
        if !super::is_valid_tool_name(&spec.name) {
            return Err(RegistryError::InvalidName(spec.name.clone()));
        }
        if let Some(version) = tool.version()
            && !is_valid_version(version)
        {
            return Err(RegistryError::InvalidVersion {
                name: spec.name.clone(),
                version: version.to_owned(),
            });
        }
        // Budgets first: the schema compiler recurses, and what it builds
        // decides how much work each call's validation does.
        check_schema(&spec.input_schema, &self.schema_budget).map_err(|e| {
            RegistryError::InvalidSchema {
                name: spec.name.clone(),
                message: e.to_string(),
            }
        })?;
        // The output schema, when declared, under the same budget.
        let invalid_output = |message: String| RegistryError::InvalidSchema {
            name: spec.name.clone(),
            message: format!("output schema: {message}"),
        };
        if let Some(schema) = tool.output_schema() {
            check_schema(schema, &self.schema_budget).map_err(|e| invalid_output(e.to_string()))?;
        }
        // Compiled now, unless whoever made the tool compiled them already
        // (then at its first call).
        let validators = if tool.schemas_checked() {
            Validators::default()
        } else {
            let input = jsonschema::validator_for(&spec.input_schema).map_err(|e| {
                RegistryError::InvalidSchema {
                    name: spec.name.clone(),
                    message: e.to_string(),
                }
            })?;
            let output = tool
                .output_schema()
                .map(jsonschema::validator_for)
                .transpose()
                .map_err(|e| invalid_output(e.to_string()))?;
            Validators::compiled(input, output)
        };
        Ok(Arc::new(Entry {
            tool,
            validators: Arc::new(validators),
            options,
            metrics: std::sync::OnceLock::new(),
        }))
    }

    /// Remove the tool `name` (or `name@version`) resolves to, and return
    /// it; `None` if there is none. Where other versions of the name
    /// remain, the plain name resolves to the last registered of them.
    ///
    /// Calls already running on it finish normally, and a
    /// [`snapshot`](Self::snapshot) taken before still has it.
    pub fn unregister(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.update(|set| {
            let Some((key, index, entry)) = set.resolve(name) else {
                return Ok((set.tools.clone(), None));
            };
            let removed = Arc::clone(&entry.tool);
            let mut tools = set.tools.clone();
            if let Some(versions) = tools.get_mut(key) {
                versions.remove(index);
                if versions.is_empty() {
                    tools.remove(key);
                }
            }
            Ok((tools, Some(removed)))
        })
        .ok()
        .flatten()
    }

    /// Change the [`ExecOptions`] of the tool `name` (or `name@version`)
    /// resolves to. Returns false if there is no such tool.
    pub fn set_options(&self, name: &str, options: ExecOptions) -> bool {
        self.update(|set| {
            let Some((key, index, entry)) = set.resolve(name) else {
                return Ok((set.tools.clone(), false));
            };
            let replaced = Arc::new(Entry {
                tool: Arc::clone(&entry.tool),
                validators: Arc::clone(&entry.validators),
                options: options.clone(),
                metrics: entry.metrics.clone(),
            });
            let mut tools = set.tools.clone();
            if let Some(versions) = tools.get_mut(key) {
                versions[index] = replaced;
            }
            Ok((tools, true))
        })
        .unwrap_or(false)
    }

    // The lookups and calls below are [`ToolSet`]'s, on the current
    // snapshot: one implementation, documented there. A caller that makes
    // several of them and needs one view takes a snapshot itself.

    /// [`ToolSet::get`] on the current [`snapshot`](Self::snapshot).
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.snapshot().get(name).cloned()
    }

    /// [`ToolSet::contains`] on the current [`snapshot`](Self::snapshot).
    pub fn contains(&self, name: &str) -> bool {
        self.snapshot().contains(name)
    }

    /// [`ToolSet::len`] on the current [`snapshot`](Self::snapshot).
    pub fn len(&self) -> usize {
        self.snapshot().len()
    }

    /// [`ToolSet::is_empty`] on the current [`snapshot`](Self::snapshot).
    pub fn is_empty(&self) -> bool {
        self.snapshot().is_empty()
    }

    /// [`ToolSet::call`] on the current [`snapshot`](Self::snapshot): call
    /// tool `name` (or `name@version`) with `input`, JSON text as a model
    /// or a user wrote it or a parsed [`Value`](serde_json::Value) (see
    /// [`CallInput`]), and report how it went.
    pub async fn call<'a>(
        &self,
        name: &str,
        input: impl Into<CallInput<'a>>,
        cx: &CallContext,
    ) -> CallReport {
        self.snapshot().call(name, input, cx).await
    }

    /// Tell every tool that `session` is over, so stateful tools free its
    /// instance.
    pub fn end_session(&self, session: &SessionId) {
        self.snapshot().end_session(session);
    }
}

#[cfg(test)]
mod tests;
