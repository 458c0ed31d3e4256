//! [`ToolRegistry`]: every tool by name (and version), input validation,
//! timeout, retries; [`ToolSet`]: one consistent snapshot of it.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

use super::log::CallLog;
use super::options::ExecOptions;
use super::schema::{InputBudget, SchemaBudget, check_input, check_schema};
use super::{CallContext, SessionId, Tool, ToolError, ToolErrorKind, ToolOrigin, ToolSpec};

/// How one call went, with the options it ran under: what
/// [`ToolRegistry::call_detailed`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// The tool's output, or why there is none.
    pub output: Result<Value, ToolError>,
    /// The effective options of the call: the tool's, with the run's and
    /// the call's [`ExecOverrides`](super::ExecOverrides) applied.
    pub options: ExecOptions,
    /// How many times the tool was run: 0 when the call never reached it
    /// (unknown tool, invalid input), else 1 plus the retries.
    pub attempts: u32,
}

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools want the same name (and neither has a version that tells
    /// them apart).
    #[error(
        "tool `{name}` is defined twice: by {first} and by {second}; rename one of them, \
         or give both distinct versions"
    )]
    DuplicateName {
        /// The contested name.
        name: String,
        /// Where the registered tool comes from.
        first: String,
        /// Where the rejected tool comes from.
        second: String,
    },
    /// The name is not one every provider accepts.
    #[error("tool name `{0}` is not valid: use 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`")]
    InvalidName(String),
    /// The version is empty or has characters other than `a-z A-Z 0-9 . _
    /// - +`.
    #[error(
        "tool `{name}` has version `{version}`, which is not valid: use 1 to 64 characters \
         of a-z, A-Z, 0-9, `.`, `_`, `-` and `+`, e.g. 1.2.0"
    )]
    InvalidVersion {
        /// The tool.
        name: String,
        /// The rejected version.
        version: String,
    },
    /// The input schema is not a valid JSON Schema.
    #[error("tool `{name}` has an invalid input schema: {message}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What the schema compiler said.
        message: String,
    },
}

struct Entry {
    tool: Arc<dyn Tool>,
    validator: Arc<jsonschema::Validator>,
    options: ExecOptions,
}

/// One consistent view of a [`ToolRegistry`]: the tools as they were when
/// [`ToolRegistry::snapshot`] was taken. Registering or unregistering later
/// changes the registry, never a snapshot, so a model request and the
/// calls of its answer see the same set, and a call in flight finishes on
/// the tool it started with.
///
/// Names: `calc` is the tool of that name, or, where several versions are
/// registered, the one registered last (still present); `calc@1.0.0` is that
/// exact version. Listings ([`specs`](Self::specs), [`tools`](Self::tools))
/// show one tool per name, the one its plain name resolves to: models only
/// ever see plain names (providers do not accept `@` in a tool name).
pub struct ToolSet {
    /// Every version of each name, in registration order; the last one is
    /// what the plain name resolves to.
    tools: BTreeMap<String, Vec<Arc<Entry>>>,
    input_budget: InputBudget,
    log: Option<Arc<CallLog>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn describe_origin(tool: &dyn Tool) -> String {
    let origin = match tool.origin() {
        ToolOrigin::Native => "a native tool".to_owned(),
        ToolOrigin::Plugin { path, .. } => format!("plugin {}", path.display()),
        ToolOrigin::Rest { url, file } => super::rest::describe_origin(&url, file.as_deref()),
    };
    match tool.version() {
        Some(version) => format!("{origin} (version {version})"),
        None => origin,
    }
}

/// Whether `version` is one a tool may carry: 1 to 64 characters of
/// `a-z A-Z 0-9 . _ - +`.
pub fn is_valid_version(version: &str) -> bool {
    (1..=64).contains(&version.len())
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
}

impl ToolSet {
    fn empty(input_budget: InputBudget) -> Self {
        Self {
            tools: BTreeMap::new(),
            input_budget,
            log: None,
        }
    }

    /// The entry `name` (or `name@version`) resolves to, and its index among
    /// the versions of its name.
    fn resolve(&self, name: &str) -> Option<(&str, usize, &Arc<Entry>)> {
        let (plain, version) = match name.split_once('@') {
            Some((plain, version)) => (plain, Some(version)),
            None => (name, None),
        };
        let (key, versions) = self.tools.get_key_value(plain)?;
        let index = match version {
            None => versions.len().checked_sub(1)?,
            Some(v) => versions.iter().position(|e| e.tool.version() == Some(v))?,
        };
        Some((key.as_str(), index, &versions[index]))
    }

    /// The tool `name` (or `name@version`) resolves to.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.resolve(name).map(|(_, _, e)| &e.tool)
    }

    /// Whether `name` (or `name@version`) resolves to a tool.
    pub fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }

    /// One tool per name (the one the plain name resolves to), sorted by
    /// name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools
            .values()
            .filter_map(|v| v.last())
            .map(|e| &e.tool)
    }

    /// The spec of each of [`tools`](Self::tools).
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools().map(|t| t.spec())
    }

    /// Every registered tool as it is addressed: `name` for a tool without
    /// a version, `name@version` for one with, sorted by name then in
    /// registration order.
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        self.tools.values().flatten().map(|e| {
            let name = &e.tool.spec().name;
            match e.tool.version() {
                Some(v) => format!("{name}@{v}"),
                None => name.clone(),
            }
        })
    }

    /// How many names there are (versions of one name count once).
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Call tool `name` with `input`, JSON text as a model or a user wrote
    /// it. See [`ToolRegistry::call`].
    ///
    /// # Errors
    ///
    /// As [`ToolRegistry::call`].
    pub async fn call(
        &self,
        name: &str,
        input: &str,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        self.call_detailed(name, input, cx).await.output
    }

    /// Like [`call`](Self::call), with the input already parsed.
    ///
    /// # Errors
    ///
    /// As [`ToolRegistry::call`].
    pub async fn call_value(
        &self,
        name: &str,
        input: Value,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        self.execute(name, Ok(input), cx).await.output
    }

    /// See [`ToolRegistry::call_detailed`].
    pub async fn call_detailed(&self, name: &str, input: &str, cx: &CallContext) -> CallReport {
        let input = if input.len() > self.input_budget.max_bytes {
            Err(ToolError::invalid_input(format!(
                "the input is {} bytes; the most a tool takes is {} bytes. Send less at once",
                input.len(),
                self.input_budget.max_bytes
            )))
        } else {
            parse_input(input)
        };
        self.execute(name, input, cx).await
    }

    /// Run the call, and record it in the log if there is one.
    async fn execute(
        &self,
        name: &str,
        input: Result<Value, ToolError>,
        cx: &CallContext,
    ) -> CallReport {
        let Some(log) = &self.log else {
            return self.execute_unlogged(name, input, cx).await;
        };
        let logged_input = match (&input, log.includes_io()) {
            (Ok(value), true) => Some(value.clone()),
            _ => None,
        };
        let started = std::time::SystemTime::now();
        let clock = std::time::Instant::now();
        let report = self.execute_unlogged(name, input, cx).await;
        let (tool, version) = match self.resolve(name) {
            Some((key, _, entry)) => (key, entry.tool.version()),
            None => (name, None),
        };
        log.record(
            tool,
            version,
            cx.session.as_ref(),
            started,
            clock.elapsed(),
            &report,
            logged_input.as_ref(),
        );
        report
    }

    async fn execute_unlogged(
        &self,
        name: &str,
        input: Result<Value, ToolError>,
        cx: &CallContext,
    ) -> CallReport {
        let Some((_, _, entry)) = self.resolve(name) else {
            return CallReport {
                output: Err(ToolError::unknown_tool(name)),
                options: ExecOptions::default().with(&cx.overrides),
                attempts: 0,
            };
        };
        // The call holds its own reference: it runs to its end even if the
        // tool is unregistered (and this snapshot dropped) meanwhile.
        let entry = Arc::clone(entry);
        let options = entry.options.with(&cx.overrides);
        let checked = input.and_then(|input| {
            check_input(&input, &self.input_budget)
                .map_err(ToolError::invalid_input)
                .and_then(|()| validate(&entry.validator, &input))
                .map(|()| input)
        });
        let input = match checked {
            Ok(input) => input,
            Err(e) => {
                return CallReport {
                    output: Err(e),
                    options,
                    attempts: 0,
                };
            }
        };
        let mut attempts = 0;
        let output = loop {
            attempts += 1;
            let call = entry.tool.call(input.clone(), cx);
            let result = match options.timeout {
                Some(limit) => tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
                    Err(ToolError::new(
                        ToolErrorKind::Timeout,
                        format!(
                            "tool `{name}` did not finish within {limit:?}; \
                             allow it more time (timeout) or ask for less work"
                        ),
                    ))
                }),
                None => call.await,
            };
            match result {
                Err(e) => match options.retry_pause(attempts - 1, &e) {
                    Some(pause) => {
                        tracing::debug!(tool = name, attempts, ?pause, error = %e, "retrying tool call");
                        tokio::time::sleep(pause).await;
                    }
                    None => break Err(e),
                },
                ok => break ok,
            }
        };
        CallReport {
            output,
            options,
            attempts,
        }
    }

    /// Tell every tool of this snapshot that `session` is over, so stateful
    /// tools free its instance.
    pub fn end_session(&self, session: &SessionId) {
        for entry in self.tools.values().flatten() {
            entry.tool.end_session(session);
        }
    }
}

/// All tools by name (and version). Validates input and applies
/// [`ExecOptions`].
///
/// Tools can be registered and unregistered at any time, also while calls
/// run: every method takes `&self`, so an `Arc<ToolRegistry>` is shared
/// with the [`ToolRunner`](crate::runner::ToolRunner) and changed from
/// outside it. Each change publishes a new [`ToolSet`]; a reader takes one
/// with [`snapshot`](Self::snapshot) and keeps a consistent view for as long
/// as it holds it (the runner takes one per model request).
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
/// let out = registry.call("echo", r#"{"a":1}"#, &CallContext::default()).await;
/// assert_eq!(out, Ok(json!({"a": 1})));
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
/// assert_eq!(registry.call("calc", "{}", &cx).await, Ok(json!("2.0.0")));
/// assert_eq!(registry.call("calc@1.0.0", "{}", &cx).await, Ok(json!("1.0.0")));
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
            current: RwLock::new(Arc::new(ToolSet::empty(input))),
            schema_budget: schema,
        }
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
        *current = Arc::new(ToolSet {
            tools,
            input_budget: current.input_budget,
            log: current.log.clone(),
        });
        Ok(value)
    }

    /// The same registry, recording its calls in `log`.
    #[must_use]
    pub fn with_log(self, log: Arc<CallLog>) -> Self {
        self.set_log(Some(log));
        self
    }

    /// Record calls in `log` from now on (`None`: stop recording). Calls
    /// already running finish under the log they started with.
    pub fn set_log(&self, log: Option<Arc<CallLog>>) {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        *current = Arc::new(ToolSet {
            tools: current.tools.clone(),
            input_budget: current.input_budget,
            log,
        });
    }

    /// The call log, if calls are being recorded.
    pub fn log(&self) -> Option<Arc<CallLog>> {
        self.snapshot().log.clone()
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
        // decides how much work each call's validation does. Both run
        // before the lock is taken.
        check_schema(&spec.input_schema, &self.schema_budget).map_err(|message| {
            RegistryError::InvalidSchema {
                name: spec.name.clone(),
                message,
            }
        })?;
        let validator = jsonschema::validator_for(&spec.input_schema).map_err(|e| {
            RegistryError::InvalidSchema {
                name: spec.name.clone(),
                message: e.to_string(),
            }
        })?;
        let name = spec.name.clone();
        let entry = Arc::new(Entry {
            tool,
            validator: Arc::new(validator),
            options,
        });
        self.update(|set| {
            let version = entry.tool.version();
            let existing = set.tools.get(&name).map(Vec::as_slice).unwrap_or_default();
            if let Some(clash) = existing.iter().find(|e| {
                let other = e.tool.version();
                version.is_none() || other.is_none() || other == version
            }) {
                return Err(RegistryError::DuplicateName {
                    name: name.clone(),
                    first: describe_origin(clash.tool.as_ref()),
                    second: describe_origin(entry.tool.as_ref()),
                });
            }
            let mut tools = set.tools.clone();
            tools
                .entry(name.clone())
                .or_default()
                .push(Arc::clone(&entry));
            Ok((tools, ()))
        })
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
                validator: Arc::clone(&entry.validator),
                options: options.clone(),
            });
            let mut tools = set.tools.clone();
            if let Some(versions) = tools.get_mut(key) {
                versions[index] = replaced;
            }
            Ok((tools, true))
        })
        .unwrap_or(false)
    }

    /// The tool `name` (or `name@version`) resolves to now.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.snapshot().get(name).cloned()
    }

    /// Whether `name` (or `name@version`) resolves to a tool now.
    pub fn contains(&self, name: &str) -> bool {
        self.snapshot().contains(name)
    }

    /// How many names there are now.
    pub fn len(&self) -> usize {
        self.snapshot().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.snapshot().is_empty()
    }

    /// Call tool `name` (or `name@version`) with `input`, JSON text as a
    /// model or a user wrote it, on the current [`snapshot`](Self::snapshot).
    ///
    /// # Errors
    ///
    /// `unknown_tool`, `invalid_input` (not JSON, or not matching the
    /// schema), or whatever the tool itself fails with.
    pub async fn call(
        &self,
        name: &str,
        input: &str,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        self.snapshot().call(name, input, cx).await
    }

    /// Like [`call`](Self::call), with the input already parsed.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    pub async fn call_value(
        &self,
        name: &str,
        input: Value,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        self.snapshot().call_value(name, input, cx).await
    }

    /// Like [`call`](Self::call), and report the effective [`ExecOptions`]
    /// and the number of attempts along with the output.
    ///
    /// The options are the tool's, with `cx.overrides` applied
    /// ([`ExecOptions::with`]). Each attempt runs under `options.timeout`
    /// (if any) on top of the tool's own limits: the smaller deadline ends
    /// it. A failure whose kind is in `options.retry_on` is retried after
    /// [`ExecOptions::retry_pause`].
    pub async fn call_detailed(&self, name: &str, input: &str, cx: &CallContext) -> CallReport {
        self.snapshot().call_detailed(name, input, cx).await
    }

    /// Tell every tool that `session` is over, so stateful tools free its
    /// instance.
    pub fn end_session(&self, session: &SessionId) {
        self.snapshot().end_session(session);
    }
}

/// Parse a tool input as JSON text; anything else is `invalid_input`.
fn parse_input(input: &str) -> Result<Value, ToolError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        // Models often send "" for a tool without parameters.
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(trimmed)
        .map_err(|e| ToolError::invalid_input(format!("the input is not valid JSON: {e}")))
}

fn validate(validator: &jsonschema::Validator, input: &Value) -> Result<(), ToolError> {
    // The common case, valid input, skips building error descriptions.
    if validator.is_valid(input) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(input)
        .take(5)
        .map(|e| {
            let path = e.instance_path.to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ToolError::invalid_input(format!(
            "the input does not match the tool's schema: {}",
            problems.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests;
