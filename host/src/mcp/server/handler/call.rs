//! One `tools/call`, however it came (through rmcp or the fast lane): what
//! it needs of the client, the proof that it needs nothing, and the call
//! itself with its session, approval, questions and notifications.

use rmcp::model::InputResponses;

use crate::tools::LogLevel;

use super::*;

impl Client {
    /// What a call of `name` with `_meta` `meta` needs of the client
    /// besides its answer: the facts [`call_tool`](Self::call_tool)
    /// branches on.
    fn needs(&self, tools: &ToolSet, name: &str, meta: &JsonObject) -> Needs {
        Needs {
            approval: tools.needs_approval(name, &self.tools.approval, &self.tools.overrides),
            questions: tools.get(name).is_some_and(|tool| tool.may_ask_user()),
            progress: meta.contains_key("progressToken"),
            logs: self.log_level.is_set() || meta.contains_key(notify::LOG_LEVEL_META_KEY),
        }
    }

    /// The proof that a call of `request` (its `_meta` in `meta`) needs
    /// nothing of the client but its answer, so the fast lane
    /// (`direct.rs`) may answer it; `None` when it needs rmcp's
    /// request (the client's user, or notifications on its stream). The
    /// same facts [`call_tool`](Self::call_tool) branches on decide.
    pub(in crate::mcp::server) fn answer_only(
        &self,
        tools: &ToolSet,
        request: &CallToolRequestParams,
        meta: &JsonObject,
    ) -> Option<AnswerOnly> {
        self.needs(tools, request.name.as_ref(), meta)
            .nothing()
            .then_some(AnswerOnly(()))
    }

    /// Call a tool of `tools` for request `params` (its `_meta` in
    /// `meta`) until `cancelled` resolves: what `tools/call` does, however
    /// it came. One snapshot for the lookup and the call: a reload between
    /// the two cannot turn a listed tool into an unknown one mid-request.
    /// Through rmcp (`reach` is [`Reach::Client`]), a call that needs
    /// approval asks the client's user, and progress and log lines go to
    /// the client; the fast lane's call carries the proof that it needs
    /// none of them ([`answer_only`](Self::answer_only)).
    pub(in crate::mcp::server) async fn call_tool(
        &self,
        tools: &ToolSet,
        request: CallToolRequestParams,
        meta: &JsonObject,
        reach: Reach<'_>,
        origin: Origin,
        cancelled: impl Future<Output = ()>,
    ) -> Result<CallToolResponse, McpError> {
        // A task's call is not the session's: its end waits for none.
        let _running = (!matches!(reach, Reach::Task(..))).then(|| {
            self.calls.fetch_add(1, Ordering::AcqRel);
            RunningCall(self)
        });
        let name = request.name.as_ref();
        if self.tools.tool_search.is_some() && name == crate::tools::search::TOOL_SEARCH_NAME {
            return Ok(super::search::answer(tools, request.arguments.as_ref(), |_| true).into());
        }
        // An unknown tool is a protocol error (JSON-RPC invalid params), as
        // the MCP spec says; everything the tool itself does is a result.
        let Some(tool) = tools.get(name) else {
            return Err(self
                .unknown_tool(tools, name, request.arguments, origin)
                .await);
        };
        // A plain call of a tool that runs only as a task is refused.
        if !matches!(reach, Reach::Task(..)) && self.tasks().is_some() {
            self.runs_as_task(tools, name, super::Asked::No)?;
        }
        let mut arguments = request.arguments.unwrap_or_default();
        let (mut cx, new_handle) = self.call_context(session_arg(&**tool), &mut arguments, meta)?;
        cx.trace_parent = origin.trace_parent;
        cx.principal = origin.principal;
        let mut questions = Questions::none();
        // What the call needs of the client, through rmcp's request; a
        // call of the fast lane is proven to need nothing.
        let client = match reach {
            Reach::Client(context) => Some((context, self.needs(tools, name, meta))),
            Reach::AnswerOnly(AnswerOnly(())) => None,
            Reach::Task(progress, asks) => {
                cx = cx.with_progress(progress);
                questions.sink = asks;
                None
            }
        };
        let mut notifier = None;
        if let Some((context, needs)) = client {
            let log_level =
                notify::requested_level(meta, &self.log_level)?.and_then(notify::min_plugin_level);
            match approve_and_ask(
                context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
                name,
                &arguments,
                needs,
            )
            .await?
            {
                std::ops::ControlFlow::Continue(asked) => questions = asked,
                std::ops::ControlFlow::Break(answer) => return Ok(answer),
            }
            (cx, notifier) = notified(context, name, log_level, cx);
        }
        cx.questions = questions.sink.take();
        let input = json_text(&arguments);
        // `notifications/cancelled` (or the connection closing) resolves
        // `cancelled`: dropping the call stops the guest at its next epoch
        // check (within a 10 ms tick) and frees its instance and slot.
        let report = tokio::select! {
            report = tools.call(name, &input, &cx) => report,
            // 2026-07-28: the call stops at a question not answered yet,
            // and the client is asked to answer it and call again.
            input = questions.unanswered() => return Ok(input.into()),
            () = cancelled => {
                tracing::info!(tool = name, "call cancelled by the client: the guest was stopped");
                // rmcp drops the answer to a cancelled request.
                return Err(McpError::internal_error("the call was cancelled", None));
            }
        };
        drop(cx);
        if let Some(notifier) = notifier {
            notifier.finish().await;
        }
        Ok(with_handle(mcp_result(report), new_handle).into())
    }

    /// The error for a call of `name`, which no tool of `tools` has (with
    /// `arguments`, from `origin`). The registry still sees the call,
    /// so it is counted (under `(unknown)`), traced and logged exactly as a
    /// library caller's call of an unknown name; it runs nothing.
    async fn unknown_tool(
        &self,
        tools: &ToolSet,
        name: &str,
        arguments: Option<JsonObject>,
        origin: Origin,
    ) -> McpError {
        let arguments = Value::Object(arguments.unwrap_or_default());
        let mut cx = self.cx.clone();
        cx.trace_parent = origin.trace_parent;
        cx.principal = origin.principal;
        let _unknown = tools.call(name, arguments, &cx).await;
        McpError::invalid_params(
            format!("no tool named `{name}`; tools/list names the tools this server has"),
            None,
        )
    }

    /// The call context for a request, and the handle to tell the client
    /// when this call started a session for it: the session the tool's
    /// [`SESSION_ARG`] names (taken out of `arguments`), else the one
    /// `_meta` names, else this connection's; a sessionless request to a
    /// stateful tool without either gets a new handle.
    fn call_context(
        &self,
        stateful: Option<&str>,
        arguments: &mut JsonObject,
        meta: &JsonObject,
    ) -> Result<(CallContext, Option<String>), McpError> {
        let in_key = |key: &str| {
            // A namespace of its own: a key never names a connection's session.
            let session = SessionId::new(format!("mcp-key:{key}"));
            CallContext::in_session(session).with_overrides(self.tools.overrides.clone())
        };
        if let Some(arg) = stateful
            && let Some(handle) = arguments.remove(arg)
        {
            let key = valid_key(&handle).ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "argument `{arg}` must be a session handle: a string of {} to {} \
                         characters of A-Z, a-z, 0-9, `-`, `_` and `.`, such as the one an \
                         earlier result of this plugin returned; leave it out to start a new \
                         session",
                        SESSION_KEY_LEN.start(),
                        SESSION_KEY_LEN.end()
                    ),
                    None,
                )
            })?;
            return Ok((in_key(key), None));
        }
        if let Some(key) = meta.get(SESSION_META_KEY) {
            let key = valid_key(key).ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "`_meta` key `{SESSION_META_KEY}` must be a string of {} to {} characters \
                         of A-Z, a-z, 0-9, `-`, `_` and `.`; use a random one (a UUID), since \
                         anyone who knows it shares the session",
                        SESSION_KEY_LEN.start(),
                        SESSION_KEY_LEN.end()
                    ),
                    None,
                )
            })?;
            return Ok((in_key(key), None));
        }
        // Not a lasting connection: a request of the sessionless revision
        // (or of a stateless server) over HTTP, whose handler and session
        // end with the answer. State needs a handle the client passes back.
        if stateful.is_some() && !self.lasting.load(Ordering::Relaxed) {
            let handle = new_handle();
            return Ok((in_key(&handle), Some(handle)));
        }
        Ok((self.cx.clone(), None))
    }
}

/// Through rmcp's `context`, what the call of `name` with `arguments`
/// `needs` of the client's user (with the request's `inputResponses` and
/// `requestState`): its approval, asked first, and the answers to the
/// tool's questions. `Break` with the answer to give instead of running
/// the call (a refusal, or 2026-07-28's `input_required`), else
/// `Continue` with how the call's questions reach the user.
async fn approve_and_ask(
    context: &RequestContext<RoleServer>,
    input_responses: Option<&InputResponses>,
    request_state: Option<&str>,
    name: &str,
    arguments: &JsonObject,
    needs: Needs,
) -> Result<std::ops::ControlFlow<CallToolResponse, Questions>, McpError> {
    // 2026-07-28: what a round's approval and answers must be for.
    // Also whose: a principal's round is no approval for another.
    let call = (needs.approval || needs.questions).then(|| {
        let by =
            crate::mcp::server::auth::Principal::of(&context.extensions).map(|p| p.owner_key());
        approval::digest(by.as_deref(), name, arguments)
    });
    let mut approved = None;
    if needs.approval {
        match approval::ask(
            context,
            input_responses,
            request_state,
            name,
            arguments,
            call.as_deref().unwrap_or_default(),
        )
        .await
        {
            approval::Gate::Run(given) => approved = given,
            approval::Gate::Answer(answer) => return Ok(std::ops::ControlFlow::Break(answer)),
        }
    }
    // A tool that may ask its user asks the client's.
    if !needs.questions {
        return Ok(std::ops::ControlFlow::Continue(Questions::none()));
    }
    Questions::of(
        context,
        input_responses,
        request_state,
        call.as_deref().unwrap_or_default(),
        approved,
    )
    .map(std::ops::ControlFlow::Continue)
    .map_err(|e| McpError::invalid_params(e, None))
}

/// `cx` with the sinks that send the call of `name`'s notifications
/// through rmcp's `context`, and the notifier that sends them (none when
/// there is nothing to send). A request with a progress token gets the
/// tool's progress reports as notifications/progress, and a client that
/// asked for log lines (at `log_level` and above) gets them as
/// notifications/message: in order, all before the result.
fn notified(
    context: &RequestContext<RoleServer>,
    name: &str,
    log_level: Option<LogLevel>,
    mut cx: CallContext,
) -> (CallContext, Option<CallNotifier>) {
    let token = context.meta.get_progress_token();
    let progress = token.is_some();
    if !(progress || log_level.is_some()) {
        return (cx, None);
    }
    let started = CallNotifier::start(token, name, context.peer.clone());
    if progress {
        cx = cx.with_progress(started.progress_sink());
    }
    if let Some(min) = log_level {
        cx = cx.with_logs(started.log_sink(min));
    }
    (cx, Some(started))
}

/// What a call needs of the client besides its answer.
#[derive(Debug, Clone, Copy)]
struct Needs {
    /// A person's approval, asked through elicitation.
    approval: bool,
    /// The tool may ask its user questions, through elicitation.
    questions: bool,
    /// Progress reports, on the request's stream.
    progress: bool,
    /// Log lines the client asked for, on the request's stream.
    logs: bool,
}

impl Needs {
    fn nothing(self) -> bool {
        !(self.approval || self.questions || self.progress || self.logs)
    }
}

/// The proof that a call needs nothing of the client but its answer; only
/// [`Client::answer_only`] makes one.
#[derive(Debug)]
pub(in crate::mcp::server) struct AnswerOnly(());

/// How a call can reach its client besides the answer.
#[derive(Debug)]
pub(in crate::mcp::server) enum Reach<'a> {
    /// Through rmcp's request: elicitation and notifications.
    Client(&'a RequestContext<RoleServer>),
    /// Not at all: the fast lane, for a call proven to need nothing.
    AnswerOnly(AnswerOnly),
    /// Not at all: a task's call, which outlives its request. Its
    /// progress goes to the task's status, and its questions (when it
    /// may ask: 2026-07-28) become the task's `input_required`; a tool
    /// that needs approval never runs as a task.
    Task(
        crate::tools::ProgressSink,
        Option<crate::tools::QuestionSink>,
    ),
}

/// Where a call comes from: the span it continues (a client's
/// `traceparent`) and who asked for it (the verified principal's subject,
/// which the call log records).
#[derive(Debug, Clone, Default)]
pub(in crate::mcp::server) struct Origin {
    pub trace_parent: Option<TraceParent>,
    pub principal: Option<String>,
}

impl Origin {
    pub(in crate::mcp::server) fn new(
        trace_parent: Option<TraceParent>,
        principal: Option<&crate::mcp::server::auth::Principal>,
    ) -> Self {
        Self {
            trace_parent,
            principal: principal.map(|p| p.subject().to_owned()),
        }
    }
}

/// `value` as JSON text. serde_json writes it into one buffer; `Value`'s
/// `Display` goes through a formatter and takes a few times as long.
pub(super) fn json_text(value: &impl serde::Serialize) -> String {
    // A `Value` (or a map of them) always serializes.
    serde_json::to_string(value).unwrap_or_default()
}

/// `value` as a session key, if it is one.
pub(super) fn valid_key(value: &Value) -> Option<&str> {
    value.as_str().filter(|k| {
        SESSION_KEY_LEN.contains(&k.len())
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    })
}

/// A new random session handle: 128 bits, as 32 hex digits after `s-`.
pub(super) fn new_handle() -> String {
    format!("s-{:032x}", rand::random::<u128>())
}

/// Tell the client the session a call started: as text (what a model
/// reads, so it can pass the handle back) and in the result's `_meta`
/// under [`SESSION_META_KEY`] (what a program reads).
pub(super) fn with_handle(mut result: CallToolResult, handle: Option<String>) -> CallToolResult {
    let Some(handle) = handle else {
        return result;
    };
    result.content.push(ContentBlock::text(format!(
        "This tool keeps state in session `{handle}`: pass \"{SESSION_ARG}\": \"{handle}\" \
         to this plugin's tools to continue with it."
    )));
    let mut meta = result.meta.take().unwrap_or_default();
    meta.insert(SESSION_META_KEY.to_owned(), Value::String(handle));
    result.meta = Some(meta);
    result
}
