//! One call on a [`ToolSet`]: its input ([`CallInput`]), how it runs
//! (validation, timeout, retries, the output schema, the call log) and the
//! [`CallReport`] it ends with.

use std::sync::Arc;

use serde_json::Value;

use super::super::options::ExecOptions;
use super::super::schema::check_input;
use super::super::{CallContext, Content, ToolError, ToolErrorKind, ToolOutput};
use super::observe::{CallSpan, Closing, Opening};
use super::set::{Entry, ToolSet};
use crate::telemetry::measured;

/// The input of one call: JSON text as a model or a user wrote it, or a
/// value already parsed. Both meet the same checks (the tool's schema, the
/// [`InputBudget`](super::super::InputBudget)'s depth and count of
/// values); text is also held to the budget's bytes before it is parsed,
/// so a caller holding text hands it over as it is rather than parsing
/// it first.
///
/// `&str`, `&String` and [`Value`] convert into it, so
/// [`ToolSet::call`] takes either.
#[derive(Debug, Clone, PartialEq)]
pub enum CallInput<'a> {
    /// JSON text (empty text is `{}`).
    Text(&'a str),
    /// A parsed JSON value.
    Value(Value),
}

impl<'a> From<&'a str> for CallInput<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(text)
    }
}

impl<'a> From<&'a String> for CallInput<'a> {
    fn from(text: &'a String) -> Self {
        Self::Text(text)
    }
}

impl From<Value> for CallInput<'_> {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

/// How one call went, with the options it ran under: what
/// [`ToolSet::call`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// The tool's output, or why there is none: its structured value, or
    /// for a result of content only, the content's stand-ins
    /// ([`ToolOutput::to_json`]).
    pub output: Result<Value, ToolError>,
    /// The content parts of a successful result (images, audio, text,
    /// resources), in order; empty for a tool that answers JSON only.
    pub content: Vec<Content>,
    /// Whether `output` is the tool's own structured value; false for a
    /// result of content only, whose `output` is the content's stand-ins,
    /// and for a failure.
    pub structured: bool,
    /// The effective options of the call: the tool's, with the run's and
    /// the call's [`ExecOverrides`](super::super::ExecOverrides) applied.
    pub options: ExecOptions,
    /// How many times the tool was run: 0 when the call never reached it
    /// (unknown tool, invalid input), else 1 plus the retries.
    pub attempts: u32,
}

impl ToolSet {
    /// Call tool `name` (or `name@version`) with `input` (JSON text or a
    /// parsed [`Value`], see [`CallInput`]), and report how it went: the
    /// output, its content parts, the effective [`ExecOptions`] and the
    /// number of attempts.
    ///
    /// The options are the tool's, with `cx.overrides` applied
    /// ([`ExecOptions::with`]). Each attempt runs under `options.timeout`
    /// (if any) on top of the tool's own limits: the smaller deadline ends
    /// it. A failure whose kind is in `options.retry_on` is retried after
    /// [`ExecOptions::retry_pause`].
    ///
    /// The report's `output` is an error for `unknown_tool`,
    /// `invalid_input` (not JSON, over the input budget, or not matching
    /// the schema), or whatever the tool itself fails with.
    pub async fn call<'a>(
        &self,
        name: &str,
        input: impl Into<CallInput<'a>>,
        cx: &CallContext,
    ) -> CallReport {
        let input = match input.into() {
            CallInput::Text(text) if text.len() > self.input_budget.max_bytes => {
                Err(ToolError::invalid_input(format!(
                    "the input is {} bytes; the most a tool takes is {} bytes. Send less at once",
                    text.len(),
                    self.input_budget.max_bytes
                )))
            }
            CallInput::Text(text) => parse_input(text),
            CallInput::Value(value) => Ok(value),
        };
        self.execute(name, input, cx).await
    }

    /// Run the call; count it and trace it where that is on.
    async fn execute(
        &self,
        name: &str,
        input: Result<Value, ToolError>,
        cx: &CallContext,
    ) -> CallReport {
        let observe = &self.observe;
        let span = CallSpan::wanted(observe).then(|| {
            let origin = self.get(name).map(|tool| tool.origin());
            CallSpan::start(
                observe,
                &Opening::new(observe, name, origin, &input, cx),
                cx,
            )
        });
        let metrics = observe.metrics.as_ref();
        if span.is_none() && metrics.is_none() {
            return self.execute_logged(name, input, cx).await;
        }
        let clock = std::time::Instant::now();
        let call = self.execute_logged(name, input, cx);
        let (report, stats) = match &span {
            Some(span) => span.run(call).await,
            None => measured(call).await,
        };
        if let Some(metrics) = metrics {
            let outcome = match &report.output {
                Ok(_) => "ok",
                Err(e) => e.kind.as_str(),
            };
            let elapsed = clock.elapsed();
            match self.resolve(name) {
                Some((key, _, entry)) => {
                    let series = entry.metrics.get_or_init(|| metrics.tool(Some(key)));
                    metrics.record(series, outcome, report.attempts, elapsed, &stats);
                }
                None => metrics.record_call(None, outcome, report.attempts, elapsed, &stats),
            }
        }
        if let Some(span) = span {
            span.end(&Closing::new(
                observe,
                &report.output,
                report.attempts,
                &stats,
            ));
        }
        report
    }

    /// Run the call, and record it in the log if there is one.
    async fn execute_logged(
        &self,
        name: &str,
        input: Result<Value, ToolError>,
        cx: &CallContext,
    ) -> CallReport {
        let Some(log) = &self.observe.log else {
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
            cx,
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
                .and_then(|()| {
                    let validator = entry.validators.input(&*entry.tool).map_err(|e| {
                        ToolError::invalid_input(format!("the tool's input schema: {e}"))
                    })?;
                    validate(validator, &input)
                })
                .map(|()| input)
        });
        let resumes = cx.handoff.as_ref().and_then(|h| h.resumed_task());
        let checked = checked.and_then(|input| match resumes {
            // Never run the work again in place of a task it cannot follow.
            Some(task) if !entry.tool.follows_tasks() => Err(ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "tool `{name}` cannot pick up task `{}`: it runs no tasks that outlive a call; call it again instead",
                    crate::text::untrusted(task, 128)
                ),
            )),
            _ => Ok(input),
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
        let (output, attempts) = run(name, &entry, input, &options, cx).await;
        let output = output.and_then(|out| match entry.validators.output(&*entry.tool) {
            Ok(Some(validator)) => check_output(name, validator, out),
            Ok(None) => Ok(out),
            Err(e) => Err(ToolError::new(
                ToolErrorKind::OutputSchemaMismatch,
                format!("tool `{name}` has an output schema that does not compile: {e}"),
            )),
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
}

/// Run `entry`'s tool on `input` under `options` (its timeout, its
/// retries); the last attempt's output, and how many attempts were made.
async fn run(
    name: &str,
    entry: &Entry,
    input: Value,
    options: &ExecOptions,
    cx: &CallContext,
) -> (Result<ToolOutput, ToolError>, u32) {
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
    (output, attempts)
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
