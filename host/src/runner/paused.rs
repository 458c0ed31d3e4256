//! Approvals in the loop: starting a run from a paused one, the decisions
//! and the approver it takes, and the steps that gate a round's calls,
//! pause on it and run it once every call is decided.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::approval::{self, Gate, PendingCall, PendingRound};
use super::driver::{Driver, ToolRunner, report};
use super::execute::{self, Done, Slot};
use super::machine::{Disposition, StopReason};
use super::outcome::{CallStatus, Iteration, RunError, RunErrorKind, RunItem};
use super::{RunnerConfig, Transcript};
use crate::approval::{Approver, Decision};
use crate::llm::{FinishReason, Message, Provider, ToolCall, Usage};
use crate::telemetry::TraceParent;
use crate::tools::{CallContext, QuestionSink, ToolErrorKind, ToolRegistry, ToolSet};

impl ToolRunner {
    /// Continue a run saved in `transcript`: from its messages, and, when
    /// it paused for approval ([`Transcript::pending`]), from its waiting
    /// round, without asking the model again for it. Give the decisions
    /// with [`decide`](Self::decide) (or an [`approver`](Self::approver));
    /// a call still undecided pauses the run again at once, with
    /// [`StopReason::AwaitingApproval`] and no model request.
    ///
    /// The saved round grants nothing: it is data from outside the process
    /// (its digest is no signature). Every call of it that it does not
    /// answer is gated again under `config` and the tools of `registry` as
    /// they are now: a call that needs approval (or that the round marks
    /// waiting) runs only with a decision given now, by
    /// [`decide`](Self::decide), the approver or the `on_tool_call`
    /// callback, whatever the round says; an approval given before the
    /// pause is not kept (the saved round lists that call as waiting). A
    /// round that is not well formed (two calls with one id, calls that are
    /// not its message's) ends the run with [`RunErrorKind::Round`] before
    /// anything runs.
    ///
    /// The caps count from here: the resumed round is not one of this
    /// run's iterations. For a run paused in this process, pass
    /// [`Transcript::from_outcome`] of its outcome, and its
    /// [`RunOutcome::session`](crate::runner::RunOutcome::session) to [`with_session`](Self::with_session) to
    /// keep its tools' state (a paused run keeps its session).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn toolhost::llm::Provider>,
    /// #               registry: std::sync::Arc<toolhost::tools::ToolRegistry>)
    /// #               -> Result<(), Box<dyn std::error::Error>> {
    /// use toolhost::approval::{ApprovalPolicy, Decision, ToolPattern};
    /// use toolhost::llm::Message;
    /// use toolhost::runner::{RunnerConfig, StopReason, ToolRunner, Transcript};
    ///
    /// let config = RunnerConfig {
    ///     approval: ApprovalPolicy::requiring([ToolPattern::new("delete_*")?]),
    ///     ..RunnerConfig::default()
    /// };
    /// let outcome = ToolRunner::new(provider.clone(), registry.clone(), config.clone(),
    ///     vec![Message::user("clean up")]).await?;
    /// if outcome.stop_reason == StopReason::AwaitingApproval {
    ///     let path = std::path::Path::new("paused.json");
    ///     Transcript::from_outcome(&outcome).save(path)?;
    ///     // ... later, maybe in another process:
    ///     let saved = Transcript::load(path)?;
    ///     let mut runner = ToolRunner::resume(provider, registry, config, saved.clone());
    ///     for request in saved.pending.iter().flat_map(|p| p.awaiting()) {
    ///         runner = runner.decide(request.call_id, Decision::Approve);
    ///     }
    ///     let outcome = runner.await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn resume(
        provider: Arc<dyn Provider>,
        registry: Arc<ToolRegistry>,
        config: RunnerConfig,
        transcript: Transcript,
    ) -> Self {
        let mut runner = Self::new(provider, registry, config, transcript.messages);
        let pending = transcript.pending;
        runner.update(move |d| d.pending = pending);
        runner
    }

    /// The decision about the waiting call `call_id` of the round this run
    /// resumes ([`resume`](Self::resume)), used once, for that call only:
    /// never for a call of a later model response, whatever its id. A
    /// decision for a call that does not wait (one that needs no approval
    /// now and is not marked waiting), or given to a run that resumes no
    /// round, ends the run with [`RunErrorKind::Decision`] before anything
    /// runs.
    pub fn decide(mut self, call_id: impl Into<String>, decision: Decision) -> Self {
        let call_id = call_id.into();
        self.update(move |d| {
            d.approval.decisions.insert(call_id, decision);
        });
        self
    }

    /// Who decides about calls that need approval (the run's
    /// [`RunnerConfig::approval`] policy, or the tool's own
    /// `needs_approval`): asked once per such call, in call order, before
    /// any call of the response runs, and awaited without blocking a
    /// thread. [`Decision::Defer`] pauses the run. Without an approver,
    /// every such call pauses the run.
    pub fn approver(mut self, approver: impl Approver + 'static) -> Self {
        let approver: Arc<dyn Approver> = Arc::new(approver);
        self.update(move |d| d.approval.approver = Some(approver));
        self
    }

    /// Who answers the questions a tool asks its user while it runs
    /// (contract 0.2 `user.ask`): a program's own UI, asked through the
    /// same path as the [`approver`](Self::approver). Without one, each
    /// question gets `unavailable` and the tool goes on without the answer.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn toolhost::llm::Provider>,
    /// #               registry: std::sync::Arc<toolhost::tools::ToolRegistry>) {
    /// use toolhost::llm::Message;
    /// use toolhost::runner::{RunnerConfig, ToolRunner};
    /// use toolhost::tools::{Answer, Question, QuestionSink};
    ///
    /// let runner = ToolRunner::new(provider, registry, RunnerConfig::default(),
    ///     vec![Message::user("book a table")])
    ///     .answerer(QuestionSink::new(|question: Question| async move {
    ///         // Show `question.message` and its fields in the program's UI ...
    ///         let _ = question;
    ///         Answer::Decline
    ///     }));
    /// # let _ = runner;
    /// # }
    /// ```
    pub fn answerer(mut self, sink: QuestionSink) -> Self {
        self.update(move |d| d.approval.questions = Some(sink));
        self
    }
}

impl Driver {
    /// The first step of a resumed run: the paused round, its calls gated
    /// again and its waiting calls decided now, run without a model
    /// request; or the same pause again while a call is still undecided.
    ///
    /// The round is data from outside (a file, a database): nothing in it
    /// grants an approval. Every call it does not answer goes through the
    /// gate as a fresh call does, under this run's policy and tools: not
    /// offered now, it is unavailable; needing approval now (or marked
    /// waiting), it is decided by the decisions given for this resume, else
    /// asked. The decisions are taken here, all of them: none is left for a
    /// later round's calls.
    pub(super) async fn resume_round(&mut self, round: PendingRound) -> Result<RunItem, RunError> {
        let mut decisions = std::mem::take(&mut self.approval.decisions);
        if let Err(e) = round.check() {
            // Not kept as the outcome's round: it could not be saved again.
            return Err(self.error(RunErrorKind::Round(e), StopReason::Error));
        }
        let tools = self.registry.snapshot();
        let (_, routes) = self.offered_specs(&tools);
        let (mut gates, waiting) = self.regate(&round, &tools, &routes);
        if let Some(id) = decisions.keys().find(|id| !waiting.contains(id)) {
            let kind = RunErrorKind::Decision {
                id: id.clone(),
                waiting,
            };
            // The round still waits: a transcript of this outcome keeps it.
            self.paused = Some(round);
            return Err(self.error(kind, StopReason::Error));
        }
        for (gate, call) in gates.iter_mut().zip(&round.message.tool_calls) {
            if matches!(gate, Gate::Awaiting) {
                *gate = self.approval.ask(call, decisions.remove(&call.id)).await;
            }
        }
        if gates.iter().any(|g| matches!(g, Gate::Awaiting)) {
            let round = approval::pending_round(round.message, gates);
            return Ok(self.pause(round, StopReason::AwaitingApproval));
        }
        let iteration = Iteration {
            number: self.requests,
            final_answer: false,
            message: round.message,
            calls: Vec::new(),
            dropped: Vec::new(),
            usage: Usage::default(),
            finish_reason: FinishReason::ToolCalls,
        };
        Ok(self
            .run_gated(&tools, &routes, iteration, gates, None)
            .await)
    }

    /// Each call of a paused `round` through the gate again, under this
    /// run's policy and `tools` (offered by `routes`): an answered call
    /// keeps its answer, one not offered now is unavailable, one that runs
    /// as a task is followed (that starts nothing: its call passed the
    /// gate when it began), one that needs approval now (or is marked
    /// waiting) awaits a decision, the rest run. Also returns the ids of
    /// the calls that await one.
    fn regate(
        &self,
        round: &PendingRound,
        tools: &ToolSet,
        routes: &BTreeMap<String, String>,
    ) -> (Vec<Gate>, Vec<String>) {
        let mut gates = Vec::with_capacity(round.calls.len());
        let mut waiting = Vec::new();
        for (call, pending) in round.message.tool_calls.iter().zip(&round.calls) {
            let marked_waiting = match pending {
                PendingCall::Answered {
                    status,
                    error_kind,
                    content,
                    parts,
                    ..
                } => {
                    gates.push(Gate::Answered(Box::new(approval::kept(
                        call,
                        *status,
                        *error_kind,
                        content.clone(),
                        parts.clone(),
                    ))));
                    continue;
                }
                PendingCall::Running { task, .. } if routes.contains_key(&call.name) => {
                    gates.push(Gate::Follow(task.clone()));
                    continue;
                }
                PendingCall::Awaiting { .. } => true,
                // A ready mark grants nothing: the gate below decides; a
                // task of a tool not offered now is unavailable there.
                PendingCall::Ready { .. } | PendingCall::Running { .. } => false,
            };
            let target = routes.get(&call.name).map_or(call.name.as_str(), |t| t);
            let needs = marked_waiting
                || self.approval.needs(
                    &self.config.approval,
                    &self.config.tool_options,
                    tools,
                    call,
                    target,
                );
            if needs {
                waiting.push(call.id.clone());
            }
            gates.push(if !routes.contains_key(&call.name) {
                Gate::Answered(Box::new(approval::answered(
                    call,
                    CallStatus::Unavailable,
                    Some(ToolErrorKind::UnknownTool),
                    super::machine::unavailable_message(&call.name),
                )))
            } else if needs {
                Gate::Awaiting
            } else {
                Gate::Run
            });
        }
        (gates, waiting)
    }

    /// How each call of a response passes the gate: declined and
    /// unavailable ones are answered, those that need approval are asked
    /// about (in call order, before any runs), the rest run.
    pub(super) async fn gate(
        &mut self,
        tools: &ToolSet,
        routes: &BTreeMap<String, String>,
        calls: &[ToolCall],
        dispositions: Vec<Disposition>,
    ) -> Vec<Gate> {
        let mut gates = Vec::with_capacity(calls.len());
        for (call, disposition) in calls.iter().zip(dispositions) {
            gates.push(match disposition {
                Disposition::Decline(message) => Gate::Answered(Box::new(approval::answered(
                    call,
                    CallStatus::Declined,
                    None,
                    message,
                ))),
                Disposition::Unavailable(message) => Gate::Answered(Box::new(approval::answered(
                    call,
                    CallStatus::Unavailable,
                    Some(ToolErrorKind::UnknownTool),
                    message,
                ))),
                Disposition::Execute => {
                    let target = routes.get(&call.name).map_or(call.name.as_str(), |t| t);
                    if self.approval.needs(
                        &self.config.approval,
                        &self.config.tool_options,
                        tools,
                        call,
                        target,
                    ) {
                        self.approval.ask(call, None).await
                    } else {
                        Gate::Run
                    }
                }
            });
        }
        gates
    }

    /// Run the calls that passed the gate, answer the others, store
    /// `iteration`'s message and the results, and report the round; or,
    /// when a call runs on as a task past the run's
    /// [`task_pause`](super::RunnerConfig::task_pause), pause on the round
    /// (nothing of it stored yet).
    pub(super) async fn run_gated(
        &mut self,
        tools: &Arc<ToolSet>,
        routes: &BTreeMap<String, String>,
        mut iteration: Iteration,
        gates: Vec<Gate>,
        trace_parent: Option<TraceParent>,
    ) -> RunItem {
        let mut cx = CallContext::in_session(self.session.clone())
            .with_overrides(self.config.tool_options.clone());
        // The calls continue the model request that asked for them (none
        // for a round resumed after a pause: that request is gone).
        cx.trace_parent = trace_parent;
        cx.questions.clone_from(&self.approval.questions);
        let slots = self.slots(tools, routes, &iteration.message.tool_calls, gates);
        let done = execute::run_round(
            tools,
            &cx,
            routes,
            &self.config,
            &iteration.message.tool_calls,
            slots,
            &self.callbacks,
        )
        .await;
        let calls = match execute::answered(done) {
            Ok(calls) => calls,
            Err(done) => {
                let calls = done
                    .into_iter()
                    .map(|d| match d {
                        Done::Record(record) => approval::answered_call(record),
                        Done::Running { call, task } => PendingCall::Running { id: call.id, task },
                    })
                    .collect();
                let round = PendingRound {
                    message: iteration.message,
                    calls,
                };
                return self.pause(round, StopReason::AwaitingTask);
            }
        };
        self.conversation
            .push(Message::Assistant(iteration.message.clone()));
        self.conversation
            .extend(calls.iter().map(|c| Message::Tool(c.result.clone())));
        self.state.record(&self.config, calls.iter().map(report));
        iteration.calls = calls;
        if let Some(on_iteration) = &self.callbacks.on_iteration {
            on_iteration(&iteration);
        }
        RunItem::Iteration(iteration)
    }

    /// What answers each call that passed `gates`: its record when the
    /// gate answered it or it is a search (the loop answers those itself,
    /// among the tools held back), none when a tool runs it.
    fn slots(
        &self,
        tools: &ToolSet,
        routes: &BTreeMap<String, String>,
        calls: &[ToolCall],
        gates: Vec<Gate>,
    ) -> Vec<Slot> {
        let search = self.config.tool_search.as_ref();
        let held_back = search.map(|_| self.held_back(tools)).unwrap_or_default();
        let held_back: Vec<_> = held_back.iter().map(|(_, spec)| *spec).collect();
        let searches = |call: &ToolCall| {
            let route = routes.get(&call.name).map(String::as_str);
            search.filter(|_| route == Some(super::search::ROUTE))
        };
        gates
            .into_iter()
            .zip(calls)
            .map(|(gate, call)| match gate {
                Gate::Answered(record) => Slot::Answered(record),
                Gate::Run | Gate::Approved => searches(call).map_or(Slot::Run, |search| {
                    Slot::Answered(Box::new(super::search::record(
                        search,
                        &held_back,
                        call,
                        self.config.max_media_bytes,
                    )))
                }),
                Gate::Follow(task) => Slot::Follow(task),
                // Not reached: a round with a call awaiting pauses first.
                Gate::Awaiting => Slot::Run,
            })
            .collect()
    }

    /// End the run waiting on `round` (for decisions, or a task: `reason`).
    /// The session is kept: the run is not over.
    pub(super) fn pause(&mut self, round: PendingRound, reason: StopReason) -> RunItem {
        self.state.pause(reason);
        self.keep_session = true;
        self.paused = Some(round);
        RunItem::Finished(self.outcome(reason))
    }
}
