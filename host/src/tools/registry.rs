//! [`ToolRegistry`]: every tool by name, input validation, timeout, retries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::schema::{InputBudget, SchemaBudget, check_input, check_schema};
use super::{CallContext, SessionId, Tool, ToolError, ToolErrorKind, ToolOrigin, ToolSpec};

/// How the registry executes one tool's calls.
///
/// The defaults are deliberately plain: no outer timeout (a plugin already
/// has its own sandbox deadline), no retries (most failures repeat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOptions {
    /// An outer deadline for each attempt. `None`: only the tool's own
    /// limits apply. It never lengthens a plugin's sandbox deadline: the
    /// smaller of the two ends the call.
    pub timeout: Option<Duration>,
    /// How many times to retry a call that failed with a kind in
    /// `retry_on`.
    pub retries: u32,
    /// The pause before the first retry; [`Backoff`] says how later pauses
    /// grow.
    pub retry_delay: Duration,
    /// How the pause grows from one retry to the next.
    pub backoff: Backoff,
    /// The error kinds worth a retry. Default: the transient ones
    /// ([`ToolErrorKind::is_transient`]: `timeout`, `busy`, `unavailable`).
    pub retry_on: Vec<ToolErrorKind>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        Self {
            timeout: None,
            retries: 0,
            retry_delay: Duration::from_millis(100),
            backoff: Backoff::default(),
            retry_on: ToolErrorKind::ALL
                .into_iter()
                .filter(|k| k.is_transient())
                .collect(),
        }
    }
}

/// How the pause between retries grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Backoff {
    /// The same `retry_delay` before every retry.
    Fixed,
    /// `retry_delay`, then twice that, four times, ... never more than
    /// `max`; each pause is drawn at random between half and all of it
    /// (jitter), so clients that failed together do not retry together.
    /// The default, with `max` 10 s.
    #[default]
    Exponential,
}

/// The longest pause [`Backoff::Exponential`] grows to, and the longest
/// `Retry-After` a retry waits for: a service asking for more is not
/// retried, and the model sees its error at once.
pub const MAX_RETRY_PAUSE: Duration = Duration::from_secs(10);

impl ExecOptions {
    /// Whether a call that failed with `error` after `attempt` retries
    /// (0 for the first try) is tried again, and after what pause.
    pub fn retry_pause(&self, attempt: u32, error: &ToolError) -> Option<Duration> {
        if attempt >= self.retries || !self.retry_on.contains(&error.kind) {
            return None;
        }
        let pause = match self.backoff {
            Backoff::Fixed => self.retry_delay,
            Backoff::Exponential => {
                let grown = self
                    .retry_delay
                    .saturating_mul(1u32.checked_shl(attempt).unwrap_or(u32::MAX))
                    .min(MAX_RETRY_PAUSE.max(self.retry_delay));
                let half = grown / 2;
                half + half.mul_f64(rand::random::<f64>())
            }
        };
        match error.retry_after {
            Some(asked) if asked > MAX_RETRY_PAUSE => None,
            Some(asked) => Some(pause.max(asked)),
            None => Some(pause),
        }
    }
}

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools want the same name.
    #[error("tool `{name}` is defined twice: by {first} and by {second}; rename one of them")]
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
    validator: jsonschema::Validator,
    options: ExecOptions,
}

/// All tools by name. Validates input and applies [`ExecOptions`].
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolhost::tools::{CallContext, NativeTool, ToolRegistry};
///
/// # tokio_test_block_on(async {
/// let mut registry = ToolRegistry::new();
/// registry.register(NativeTool::new(
///     "echo",
///     "Returns its input.",
///     json!({"type": "object"}),
///     |input| async move { Ok(input) },
/// ))?;
/// let out = registry.call("echo", r#"{"a":1}"#, &CallContext::default()).await;
/// assert_eq!(out, Ok(json!({"a": 1})));
/// # Ok::<_, toolhost::tools::RegistryError>(())
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Entry>,
    schema_budget: SchemaBudget,
    input_budget: InputBudget,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn describe_origin(origin: &ToolOrigin) -> String {
    match origin {
        ToolOrigin::Native => "a native tool".to_owned(),
        ToolOrigin::Plugin { path, .. } => format!("plugin {}", path.display()),
        ToolOrigin::Rest { url, file } => super::rest::describe_origin(url, file.as_deref()),
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
            tools: BTreeMap::new(),
            schema_budget: schema,
            input_budget: input,
        }
    }

    /// Add `tool` with default [`ExecOptions`].
    ///
    /// # Errors
    ///
    /// The name is taken or invalid, or the input schema does not compile.
    pub fn register(&mut self, tool: impl Tool) -> Result<(), RegistryError> {
        self.register_with(Arc::new(tool), ExecOptions::default())
    }

    /// Add a shared `tool` with `options`.
    ///
    /// # Errors
    ///
    /// The name is taken or invalid, or the input schema does not compile.
    pub fn register_with(
        &mut self,
        tool: Arc<dyn Tool>,
        options: ExecOptions,
    ) -> Result<(), RegistryError> {
        let spec = tool.spec();
        if !super::is_valid_tool_name(&spec.name) {
            return Err(RegistryError::InvalidName(spec.name.clone()));
        }
        if let Some(existing) = self.tools.get(&spec.name) {
            return Err(RegistryError::DuplicateName {
                name: spec.name.clone(),
                first: describe_origin(&existing.tool.origin()),
                second: describe_origin(&tool.origin()),
            });
        }
        // Budgets first: the schema compiler recurses, and what it builds
        // decides how much work each call's validation does.
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
        self.tools.insert(
            spec.name.clone(),
            Entry {
                tool,
                validator,
                options,
            },
        );
        Ok(())
    }

    /// Change the [`ExecOptions`] of tool `name`. Returns false if there is
    /// no such tool.
    pub fn set_options(&mut self, name: &str, options: ExecOptions) -> bool {
        match self.tools.get_mut(name) {
            Some(entry) => {
                entry.options = options;
                true
            }
            None => false,
        }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).map(|e| &e.tool)
    }

    /// Whether a tool called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values().map(|e| &e.tool)
    }

    /// Every tool's spec, sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|e| e.tool.spec())
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Call tool `name` with `input`, JSON text as a model or a user wrote it.
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
        if input.len() > self.input_budget.max_bytes {
            return Err(ToolError::invalid_input(format!(
                "the input is {} bytes; the most a tool takes is {} bytes. Send less at once",
                input.len(),
                self.input_budget.max_bytes
            )));
        }
        let value = parse_input(input)?;
        self.call_value(name, value, cx).await
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
        let entry = self
            .tools
            .get(name)
            .ok_or_else(|| ToolError::unknown_tool(name))?;
        check_input(&input, &self.input_budget).map_err(ToolError::invalid_input)?;
        validate(&entry.validator, &input)?;
        let mut attempt = 0;
        loop {
            let call = entry.tool.call(input.clone(), cx);
            let result = match entry.options.timeout {
                Some(limit) => tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
                    Err(ToolError::new(
                        ToolErrorKind::Timeout,
                        format!("tool `{name}` did not finish within {limit:?}"),
                    ))
                }),
                None => call.await,
            };
            match result {
                Err(e) => match entry.options.retry_pause(attempt, &e) {
                    Some(pause) => {
                        attempt += 1;
                        tracing::debug!(tool = name, attempt, ?pause, error = %e, "retrying tool call");
                        tokio::time::sleep(pause).await;
                    }
                    None => return Err(e),
                },
                ok => return ok,
            }
        }
    }

    /// Tell every tool that `session` is over, so stateful tools free its
    /// instance.
    pub fn end_session(&self, session: &SessionId) {
        for entry in self.tools.values() {
            entry.tool.end_session(session);
        }
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
