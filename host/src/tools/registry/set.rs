//! [`ToolSet`]: one consistent snapshot of the registry, and how a call
//! runs on it (validation, timeout, retries, the call log).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::super::log::CallLog;
use super::super::options::ExecOptions;
use super::super::schema::{InputBudget, check_input};
use super::super::{CallContext, SessionId, Tool, ToolError, ToolErrorKind, ToolOutput, ToolSpec};
use super::CallReport;
use super::observe::Observe;

pub(super) struct Entry {
    pub(super) tool: Arc<dyn Tool>,
    pub(super) validator: Arc<jsonschema::Validator>,
    /// The tool's output schema, compiled, when it declares one.
    pub(super) output_validator: Option<Arc<jsonschema::Validator>>,
    pub(super) options: ExecOptions,
    /// The tool's series in the registry's metrics, looked up at its first
    /// counted call.
    pub(super) metrics: std::sync::OnceLock<crate::telemetry::ToolMetrics>,
}

/// One consistent view of a [`ToolRegistry`](super::ToolRegistry): the tools as they were when
/// [`ToolRegistry::snapshot`](super::ToolRegistry::snapshot) was taken. Registering or unregistering later
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
    pub(super) tools: BTreeMap<String, Vec<Arc<Entry>>>,
    pub(super) input_budget: InputBudget,
    pub(super) log: Option<Arc<CallLog>>,
    pub(super) observe: Observe,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolSet {
    pub(super) fn empty(input_budget: InputBudget) -> Self {
        Self {
            tools: BTreeMap::new(),
            input_budget,
            log: None,
            observe: Observe::default(),
        }
    }

    /// The entry `name` (or `name@version`) resolves to, and its index among
    /// the versions of its name.
    pub(super) fn resolve(&self, name: &str) -> Option<(&str, usize, &Arc<Entry>)> {
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

    /// The [`ExecOptions`] of the tool `name` (or `name@version`) resolves
    /// to, as registered (before a run's or a call's overrides).
    pub fn options(&self, name: &str) -> Option<&ExecOptions> {
        self.resolve(name).map(|(_, _, e)| &e.options)
    }

    /// Whether a call of `name` (or `name@version`) needs a person's
    /// approval: `policy` names it, or its tool asks for it
    /// (`needs_approval` in its [`ExecOptions`], under `overrides`). The
    /// one rule the loop and the MCP server both apply.
    pub fn needs_approval(
        &self,
        name: &str,
        policy: &crate::approval::ApprovalPolicy,
        overrides: &super::super::ExecOverrides,
    ) -> bool {
        policy.requires(name)
            || self.options(name).is_some_and(|o| {
                // What `o.with(overrides).needs_approval` says, without
                // copying the rest of the options (every call asks).
                overrides.needs_approval.unwrap_or(o.needs_approval)
            })
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

    /// Call tool `name` (or `name@version`) with `input`, JSON text as a
    /// model or a user wrote it (empty text is `{}`).
    ///
    /// # Errors
    ///
    /// `unknown_tool`, `invalid_input` (not JSON, over the input budget,
    /// or not matching the schema), or whatever the tool itself fails
    /// with.
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
    /// As [`call`](Self::call).
    pub async fn call_value(
        &self,
        name: &str,
        input: Value,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        self.execute(name, Ok(input), cx).await.output
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
    pub(super) async fn execute_logged(
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
                content: Vec::new(),
                structured: false,
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
                .map_err(|e| ToolError::invalid_input(e.to_string()))
                .and_then(|()| validate(&entry.validator, &input))
                .map(|()| input)
        });
        let input = match checked {
            Ok(input) => input,
            Err(e) => {
                return CallReport {
                    output: Err(e),
                    content: Vec::new(),
                    structured: false,
                    options,
                    attempts: 0,
                };
            }
        };
        let mut attempts = 0;
        let output = loop {
            attempts += 1;
            let call = entry.tool.call_output(input.clone(), cx);
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
        let output = output.and_then(|out| match &entry.output_validator {
            Some(validator) => check_output(name, validator, out),
            None => Ok(out),
        });
        let (output, content, structured) = match output {
            // Moved out, not cloned: this runs on every call.
            Ok(ToolOutput {
                structured: Some(value),
                content,
            }) => (Ok(value), content, true),
            Ok(out) => (Ok(out.to_json()), out.content, false),
            Err(e) => (Err(e), Vec::new(), false),
        };
        CallReport {
            output,
            content,
            structured,
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

/// A structured result checked against the tool's output schema: a
/// mismatch is a result the model sees (`output_schema_mismatch`), naming
/// what is wrong, not a host fault. A result with content only has no
/// structured value, and a declared schema asks for one.
fn check_output(
    name: &str,
    validator: &jsonschema::Validator,
    output: ToolOutput,
) -> Result<ToolOutput, ToolError> {
    let mismatch = |detail: String| {
        ToolError::new(
            ToolErrorKind::OutputSchemaMismatch,
            format!(
                "tool `{name}` answered a result that does not match its output schema: {detail}; this is a bug in the tool"
            ),
        )
    };
    let Some(value) = &output.structured else {
        return Err(mismatch("it has no structured value".to_owned()));
    };
    if validator.is_valid(value) {
        return Ok(output);
    }
    Err(mismatch(problems(validator, value).join("; ")))
}

/// The first few ways `value` breaks the schema, each with its path.
fn problems(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .take(5)
        .map(|e| {
            let path = e.instance_path.to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect()
}

fn validate(validator: &jsonschema::Validator, input: &Value) -> Result<(), ToolError> {
    // The common case, valid input, skips building error descriptions.
    if validator.is_valid(input) {
        return Ok(());
    }
    let problems = problems(validator, input);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ToolError::invalid_input(format!(
            "the input does not match the tool's schema: {}",
            problems.join("; ")
        )))
    }
}
