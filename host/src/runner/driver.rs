//! [`ToolRunner`]: performs what [`LoopState`] decides.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use tracing::Instrument;

use super::approval::{self, Approval, Gate, PendingRound};
use super::config::{RunnerConfig, ToolSelection};
use super::conversation::Conversation;
use super::execute::{self, Callbacks};
use super::machine::{CallOutcome, CallReport, LoopState, Next, StopReason, Verdict};
use super::outcome::{
    CallRecord, CallStatus, Iteration, RequestInfo, RunError, RunErrorKind, RunItem, RunOutcome,
    final_message,
};
use super::spans;
use crate::llm::{
    ChatRequest, ChatResponse, GenerationParams, Message, Provider, ToolCall, ToolChoice, Usage,
};
use crate::telemetry::TraceParent;
use crate::tools::{SessionId, ToolRegistry, ToolSet, ToolSpec};

mod request;

type Update = Box<dyn FnOnce(&mut Driver) + Send>;
type StepFuture = BoxFuture<'static, (Box<Driver>, Result<RunItem, RunError>)>;

/// The capped tool loop: ask the model, execute its tool calls, append the
/// results, repeat until the model answers without calls or a cap stops it.
///
/// A `ToolRunner` is a [`Stream`] of [`RunItem`]s — one
/// [`RunItem::Iteration`] per model response, then one
/// [`RunItem::Finished`] — or an `Err(RunError)` as its last item. It is
/// also [`IntoFuture`]: `runner.await` runs to the end. Either way it runs
/// once: `await` takes it by value, and the stream ends after its last item.
///
/// Between items, [`set_params`](Self::set_params) and
/// [`push_messages`](Self::push_messages) change what the next request
/// sees. The runner needs a Tokio runtime (each tool call runs on its own
/// task).
///
/// One [`SessionId`] is used for every call of the run, so stateful tools
/// keep their state for the conversation; the registry's `end_session` is
/// called when the run ends or the runner is dropped, unless the run was
/// made with [`keep_session`](Self::keep_session): then a later run with
/// [`with_session`](Self::with_session) and the earlier
/// [`RunOutcome::messages`] continues the conversation, tool state included
/// (until the plugin host's idle TTL or session cap drops it).
///
/// # Examples
///
/// ```no_run
/// # async fn demo(provider: std::sync::Arc<dyn toolhost::llm::Provider>,
/// #               registry: std::sync::Arc<toolhost::tools::ToolRegistry>)
/// #               -> Result<(), toolhost::runner::RunError> {
/// use toolhost::llm::Message;
/// use toolhost::runner::{RunnerConfig, ToolRunner};
///
/// let config = RunnerConfig { max_iterations: 5, ..RunnerConfig::default() };
/// let outcome = ToolRunner::new(provider, registry, config, vec![Message::user("hi")]).await?;
/// println!("{} ({})", outcome.final_text, outcome.stop_reason);
/// # Ok(()) }
/// ```
pub struct ToolRunner {
    session: SessionId,
    driver: Option<Box<Driver>>,
    in_flight: Option<StepFuture>,
    pending: Vec<Update>,
    done: bool,
}

impl std::fmt::Debug for ToolRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRunner")
            .field("session", &self.session)
            .field("in_flight", &self.in_flight.is_some())
            .field("pending_updates", &self.pending.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl ToolRunner {
    /// A run of `provider` with the tools of `registry`, starting from
    /// `messages` (system prompt and user message, usually). Nothing happens
    /// until the runner is polled or awaited.
    pub fn new(
        provider: Arc<dyn Provider>,
        registry: Arc<ToolRegistry>,
        config: RunnerConfig,
        messages: Vec<Message>,
    ) -> Self {
        let session = SessionId::random();
        Self {
            session: session.clone(),
            driver: Some(Box::new(Driver {
                provider,
                registry,
                config,
                state: LoopState::new(),
                conversation: Conversation::new(messages),
                session,
                usage: Usage::default(),
                requests: 0,
                callbacks: Callbacks::default(),
                approval: Approval::default(),
                pending: None,
                paused: None,
                keep_session: false,
                span: None,
            })),
            in_flight: None,
            pending: Vec::new(),
            done: false,
        }
    }

    /// Use `session` instead of a random session id.
    pub fn with_session(mut self, session: SessionId) -> Self {
        self.session = session.clone();
        self.update(move |d| d.session = session);
        self
    }

    /// Do not end the session when the run ends: stateful tools keep their
    /// instances, so that a later run with the same session (see
    /// [`with_session`](Self::with_session) and [`RunOutcome::session`])
    /// finds their state. A kept session still ends after the plugin's idle
    /// TTL, counts toward the host's `max_sessions`, and may be evicted
    /// when that cap is reached; end it early with
    /// [`ToolRegistry::end_session`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn toolhost::llm::Provider>,
    /// #               registry: std::sync::Arc<toolhost::tools::ToolRegistry>)
    /// #               -> Result<(), toolhost::runner::RunError> {
    /// use toolhost::llm::Message;
    /// use toolhost::runner::{RunnerConfig, ToolRunner};
    ///
    /// let config = RunnerConfig::default();
    /// let first = ToolRunner::new(provider.clone(), registry.clone(), config.clone(),
    ///     vec![Message::user("remember 7")])
    ///     .keep_session()
    ///     .await?;
    /// let mut messages = first.messages;
    /// messages.push(Message::user("what did I ask you to remember?"));
    /// let second = ToolRunner::new(provider, registry, config, messages)
    ///     .with_session(first.session)
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn keep_session(mut self) -> Self {
        self.update(|d| d.keep_session = true);
        self
    }

    /// The session id of this run's tool calls.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Called after each round with the same [`Iteration`] the stream
    /// yields.
    pub fn on_iteration(mut self, f: impl Fn(&Iteration) + Send + Sync + 'static) -> Self {
        let f: execute::OnIteration = Arc::new(f);
        self.update(move |d| d.callbacks.on_iteration = Some(f));
        self
    }

    /// A synchronous approver asked about *every* call before it runs, in
    /// call order; return [`Decision::Deny`](crate::approval::Decision) to
    /// answer it with a `permission_denied` error instead, or
    /// [`Decision::Defer`](crate::approval::Decision) to pause the run with
    /// the call waiting. Declined and unavailable calls are not shown. It is
    /// the approval path of [`approver`](Self::approver) with a decision
    /// that cannot wait, and takes its place.
    pub fn on_tool_call(
        mut self,
        f: impl Fn(&ToolCall) -> crate::approval::Decision + Send + Sync + 'static,
    ) -> Self {
        let f: approval::OnToolCall = Arc::new(f);
        self.update(move |d| d.approval.on_tool_call = Some(f));
        self
    }

    /// Called with each call's record (result, status, duration), in call
    /// order, as soon as it and the calls before it are done.
    pub fn on_tool_result(mut self, f: impl Fn(&CallRecord) + Send + Sync + 'static) -> Self {
        let f: execute::OnToolResult = Arc::new(f);
        self.update(move |d| d.callbacks.on_tool_result = Some(f));
        self
    }

    /// Called with each progress report of a running call, with the call
    /// (its id and tool name): a tool that reports progress (a plugin's
    /// `progress` import, a native tool's
    /// [`ProgressSink`](crate::tools::ProgressSink)) reaches the program
    /// running the loop, in the order the tool reported. The host passes on
    /// only reports that move forward, at most one per
    /// [`ProgressSink::MIN_INTERVAL`](crate::tools::ProgressSink::MIN_INTERVAL)
    /// per call, with the message clipped and escaped. It runs on the call's
    /// thread while the call runs: it must not block (send to a channel).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn toolhost::llm::Provider>,
    /// #               registry: std::sync::Arc<toolhost::tools::ToolRegistry>)
    /// #               -> Result<(), toolhost::runner::RunError> {
    /// use toolhost::llm::Message;
    /// use toolhost::runner::{RunnerConfig, ToolRunner};
    ///
    /// ToolRunner::new(provider, registry, RunnerConfig::default(), vec![Message::user("index it")])
    ///     .on_progress(|call, p| match p.total {
    ///         Some(total) => eprintln!("{} [{}]: {}/{}", call.name, call.id, p.done, total),
    ///         None => eprintln!("{} [{}]: {}", call.name, call.id, p.done),
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn on_progress(
        mut self,
        f: impl Fn(&ToolCall, &crate::tools::Progress) + Send + Sync + 'static,
    ) -> Self {
        let f: execute::OnProgress = Arc::new(f);
        self.update(move |d| d.callbacks.on_progress = Some(f));
        self
    }

    /// Called with answer text as it streams in (with
    /// [`RunnerConfig::stream`]).
    pub fn on_text(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        let f: execute::OnText = Arc::new(f);
        self.update(move |d| d.callbacks.on_text = Some(f));
        self
    }

    /// Called before each model request with the run's
    /// [`RunnerConfig::generation`] parameters, to change them for that
    /// request only (a lower temperature on the first request, a named
    /// tool at step 2, more output room for the last). Whatever it sets,
    /// the [`FinalAnswer`](super::OnMaxIterations::FinalAnswer) request has
    /// tool choice `None`. Values the provider cannot take end the run with
    /// [`LlmError::InvalidParams`](crate::llm::LlmError::InvalidParams),
    /// before the request is sent.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn toolhost::llm::Provider>,
    /// #               registry: std::sync::Arc<toolhost::tools::ToolRegistry>)
    /// #               -> Result<(), toolhost::runner::RunError> {
    /// use toolhost::llm::{Message, ToolChoice};
    /// use toolhost::runner::{RunnerConfig, ToolRunner};
    ///
    /// let outcome = ToolRunner::new(provider, registry, RunnerConfig::default(),
    ///     vec![Message::user("what is 2+3?")])
    ///     .on_request(|request, params| {
    ///         if request.number == 1 {
    ///             params.tool_choice = ToolChoice::Tool("add".into());
    ///         }
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn on_request(
        mut self,
        f: impl Fn(&RequestInfo<'_>, &mut GenerationParams) + Send + Sync + 'static,
    ) -> Self {
        let f: execute::OnRequest = Arc::new(f);
        self.update(move |d| d.callbacks.on_request = Some(f));
        self
    }

    /// Change the configuration from the next request on: pass a whole
    /// [`RunnerConfig`] or a closure `|c: &mut RunnerConfig| ...`. Counters
    /// (iterations, calls made) are kept; new caps apply to them.
    pub fn set_params(&mut self, update: impl UpdateParams) {
        self.update(move |d| update.apply(&mut d.config));
    }

    /// Append messages before the next request (e.g. a user message between
    /// rounds). They must keep the tool-call invariant, or the next request
    /// is not sent and the run ends with [`RunErrorKind::Invariant`].
    pub fn push_messages(&mut self, messages: impl IntoIterator<Item = Message>) {
        let messages: Vec<Message> = messages.into_iter().collect();
        self.update(move |d| d.conversation.extend(messages));
    }

    pub(super) fn update(&mut self, f: impl FnOnce(&mut Driver) + Send + 'static) {
        match &mut self.driver {
            Some(driver) => f(driver),
            None => self.pending.push(Box::new(f)),
        }
    }
}

/// A change of [`RunnerConfig`] for [`ToolRunner::set_params`]: a whole new
/// config, or a closure that edits it.
pub trait UpdateParams: Send + 'static {
    /// Apply the change.
    fn apply(self, config: &mut RunnerConfig);
}

impl UpdateParams for RunnerConfig {
    fn apply(self, config: &mut RunnerConfig) {
        *config = self;
    }
}

impl<F: FnOnce(&mut RunnerConfig) + Send + 'static> UpdateParams for F {
    fn apply(self, config: &mut RunnerConfig) {
        self(config);
    }
}

impl Stream for ToolRunner {
    type Item = Result<RunItem, RunError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.in_flight.is_none() {
            let Some(mut driver) = this.driver.take() else {
                this.done = true;
                return Poll::Ready(None);
            };
            for update in this.pending.drain(..) {
                update(&mut driver);
            }
            this.in_flight = Some(driver.step().boxed());
        }
        let Some(in_flight) = &mut this.in_flight else {
            return Poll::Ready(None);
        };
        let (driver, item) = futures::ready!(in_flight.as_mut().poll(cx));
        this.in_flight = None;
        match &item {
            Ok(RunItem::Iteration(_)) => this.driver = Some(driver),
            // The driver is dropped here, which ends the tool session.
            Ok(RunItem::Finished(_)) | Err(_) => this.done = true,
        }
        Poll::Ready(Some(item))
    }
}

impl IntoFuture for ToolRunner {
    type Output = Result<RunOutcome, RunError>;
    type IntoFuture = BoxFuture<'static, Self::Output>;

    /// Run to the end (continuing where the stream left off, if it was
    /// polled before).
    fn into_future(mut self) -> Self::IntoFuture {
        async move {
            while let Some(item) = self.next().await {
                if let RunItem::Finished(outcome) = item? {
                    return Ok(outcome);
                }
            }
            Err(RunError {
                kind: RunErrorKind::AlreadyFinished,
                outcome: Box::new(RunOutcome {
                    messages: Vec::new(),
                    history_len: 0,
                    final_text: String::new(),
                    stop_reason: StopReason::Error,
                    iterations: 0,
                    tool_calls: 0,
                    usage: Usage::default(),
                    session: self.session.clone(),
                    pending: None,
                }),
            })
        }
        .boxed()
    }
}

pub(super) struct Driver {
    pub(super) provider: Arc<dyn Provider>,
    pub(super) registry: Arc<ToolRegistry>,
    pub(super) config: RunnerConfig,
    pub(super) state: LoopState,
    pub(super) conversation: Conversation,
    pub(super) session: SessionId,
    pub(super) usage: Usage,
    pub(super) requests: u32,
    pub(super) callbacks: Callbacks,
    pub(super) approval: Approval,
    /// The waiting round this run resumes (before its first step).
    pub(super) pending: Option<PendingRound>,
    /// The round this run paused on (for its outcome).
    pub(super) paused: Option<PendingRound>,
    /// Leave the session to its idle TTL instead of ending it on drop.
    pub(super) keep_session: bool,
    /// The run's `invoke_agent` span, made at the first step (once the
    /// session is known); it ends when the driver is dropped.
    pub(super) span: Option<tracing::Span>,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.keep_session {
            self.registry.end_session(&self.session);
        }
    }
}

impl Driver {
    /// One model request and its round, or the end.
    async fn step(mut self: Box<Self>) -> (Box<Self>, Result<RunItem, RunError>) {
        let span = match &self.span {
            Some(span) => span.clone(),
            None => {
                let span = spans::run(&*self.provider, self.session.as_str());
                self.span = Some(span.clone());
                span
            }
        };
        let item = self.step_inner().instrument(span.clone()).await;
        match &item {
            Ok(RunItem::Finished(outcome)) => spans::finish_run(&span, outcome, None),
            Err(e) => spans::finish_run(&span, &e.outcome, Some(e.kind.type_name())),
            Ok(RunItem::Iteration(_)) => {}
        }
        (self, item)
    }

    /// One step: a paused round resumed, or the model asked and its
    /// answer's calls gated and run, or the end.
    async fn step_inner(&mut self) -> Result<RunItem, RunError> {
        if let Some(round) = self.pending.take() {
            return self.resume_round(round).await;
        }
        if let Some(id) = self.approval.decisions.keys().next() {
            let kind = RunErrorKind::Decision {
                id: id.clone(),
                waiting: Vec::new(),
            };
            return Err(self.error(kind, StopReason::Error));
        }
        let final_answer = match self.state.next(&self.config) {
            Next::Finish(reason) => return Ok(RunItem::Finished(self.outcome(reason))),
            Next::Request { final_answer } => final_answer,
        };
        if let Err(e) = self.conversation.check_invariant() {
            return Err(self.error(RunErrorKind::Invariant(e), StopReason::Error));
        }
        // One snapshot per request: the tools offered and the calls of the
        // answer see the same set, whatever is registered meanwhile.
        let tools = self.registry.snapshot();
        let (specs, routes) = self.offered_specs(&tools);
        let deferred = self.deferred(&tools);
        self.requests += 1;
        let (response, trace_parent) = self.ask_model(final_answer, &specs, &deferred).await?;
        self.usage += response.usage;
        let mut message = response.message;
        let plan = self
            .state
            .plan(&self.config, &mut message, |name| routes.contains_key(name));
        if let Verdict::OverLimit { count, limit } = plan.verdict {
            let kind = RunErrorKind::OverLimit {
                count,
                limit,
                response: Box::new(message),
            };
            return Err(self.error(kind, StopReason::OverLimit));
        }
        let gates = self
            .gate(&tools, &routes, &message.tool_calls, plan.dispositions)
            .await;
        if gates.iter().any(|g| matches!(g, Gate::Awaiting)) {
            let round = approval::pending_round(message, gates);
            return Ok(self.pause(round, StopReason::AwaitingApproval));
        }
        let iteration = Iteration {
            number: self.requests,
            final_answer,
            message,
            calls: Vec::new(),
            dropped: plan.dropped,
            usage: response.usage,
            finish_reason: response.finish_reason,
        };
        Ok(self
            .run_gated(&tools, &routes, iteration, gates, trace_parent)
            .await)
    }

    /// Ask the model for its next answer, offering `specs` (`deferred` of
    /// them held back by the provider's own search), in a `chat` span: the
    /// response, and the trace parent its calls run under.
    async fn ask_model(
        &mut self,
        final_answer: bool,
        specs: &[ToolSpec],
        deferred: &[String],
    ) -> Result<(ChatResponse, Option<TraceParent>), RunError> {
        let params = self.request_params(final_answer, specs);
        let on_text = self.callbacks.on_text.clone();
        let request = ChatRequest {
            messages: self.conversation.messages(),
            tools: specs,
            params: &params,
            stream: self.config.stream,
            on_text: on_text.as_deref().map(|f| f as _),
            deferred,
        };
        let chat = spans::chat(&*self.provider);
        let response = self
            .provider
            .complete(request)
            .instrument(chat.clone())
            .await;
        spans::finish_chat(&chat, &response);
        // The calls of this answer are the request's children.
        let trace_parent = TraceParent::of(&chat);
        drop(chat);
        match response {
            Ok(response) => Ok((response, trace_parent)),
            Err(source) => {
                let kind = RunErrorKind::Provider {
                    iteration: self.requests,
                    source,
                };
                Err(self.error(kind, StopReason::Error))
            }
        }
    }

    pub(super) fn outcome(&mut self, stop_reason: StopReason) -> RunOutcome {
        // Only this run's messages: an answer in the history it was given
        // is not this run's answer.
        let final_text = final_message(self.conversation.added())
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let history_len = self.conversation.history_len();
        let messages = std::mem::take(&mut self.conversation).into_messages();
        RunOutcome {
            messages,
            history_len,
            final_text,
            stop_reason,
            iterations: self.state.iterations(),
            tool_calls: self.state.total_calls(),
            usage: self.usage,
            session: self.session.clone(),
            pending: self.paused.take(),
        }
    }

    pub(super) fn error(&mut self, kind: RunErrorKind, stop_reason: StopReason) -> RunError {
        self.state.fail(stop_reason);
        RunError {
            kind,
            outcome: Box::new(self.outcome(stop_reason)),
        }
    }
}

pub(super) fn report(record: &CallRecord) -> CallReport<'_> {
    let outcome = match record.status {
        CallStatus::Succeeded => CallOutcome::Succeeded,
        CallStatus::Declined => CallOutcome::Declined,
        _ => CallOutcome::Failed(&record.result.content),
    };
    CallReport {
        call: &record.call,
        outcome,
    }
}
