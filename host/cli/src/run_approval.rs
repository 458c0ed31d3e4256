//! Who approves a call in `toolhost run`: the `--approve`/`--deny` flags,
//! then the person at the terminal; without a terminal, the run pauses
//! (with `--transcript`) or the call is refused.
//!
//! A pattern matches tool names only, never a call id: the model chooses
//! its call ids. A call id is a decision for one call of the paused round a
//! `--resume` continues (`--approve-call ID`, `--deny-call ID`), given to
//! the library once, for that call.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use clap::Args;
use futures::future::BoxFuture;
use toolhost::approval::{ApprovalRequest, Approver, Decision, ToolPattern};
use toolhost::runner::{PendingRound, RunOutcome};
use toolhost::text::{clip, escape_controls};

/// The approval flags of `toolhost run`.
#[derive(Debug, Clone, Args)]
pub struct ApprovalArgs {
    /// Approve calls of tools matching PATTERN (`*` is any run of
    /// characters; tool names only, never call ids), without asking.
    /// Repeatable. With --resume, a value that matches no tool and is the
    /// id of a waiting call of the paused round is --approve-call ID.
    #[arg(long, value_name = "PATTERN")]
    pub approve: Vec<String>,
    /// Approve every call that needs approval, without asking.
    #[arg(long, conflicts_with = "approve")]
    pub approve_all: bool,
    /// Refuse calls of tools matching PATTERN (tool names only), without
    /// asking. Wins over --approve. Repeatable. With --resume, a value
    /// that matches no tool and is the id of a waiting call of the paused
    /// round is --deny-call ID.
    #[arg(long, value_name = "PATTERN")]
    pub deny: Vec<String>,
    /// With --resume: approve the call with id ID of the paused round,
    /// once (no other call, whatever its id). Repeatable.
    #[arg(long, value_name = "ID", requires = "resume")]
    pub approve_call: Vec<String>,
    /// With --resume: refuse the call with id ID of the paused round.
    /// Wins over --approve-call. Repeatable.
    #[arg(long, value_name = "ID", requires = "resume")]
    pub deny_call: Vec<String>,
    /// Also require approval for tools matching PATTERN in this run (on
    /// top of the host config's [approval] require and the tools' own
    /// needs_approval). Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub require_approval: Vec<ToolPattern>,
}

/// What the approval flags say: tool patterns for every call, and the
/// decisions for calls of the resumed round, by id.
#[derive(Debug, Clone, Default)]
pub struct ApprovalFlags {
    approve: Vec<ToolPattern>,
    deny: Vec<ToolPattern>,
    approve_all: bool,
    /// Decisions by call id, for the round a resume continues.
    pub decisions: Vec<(String, Decision)>,
}

impl ApprovalArgs {
    /// The flags sorted out: `--approve`/`--deny` values are tool
    /// patterns, except, when `round` (the paused round a resume
    /// continues) has a waiting call with that id and the value matches
    /// none of `tools`, a decision for that call (as `--approve-call`).
    ///
    /// # Errors
    ///
    /// A value that is neither a tool pattern nor such a call id.
    pub fn sort(
        &self,
        round: Option<&PendingRound>,
        tools: &[String],
    ) -> anyhow::Result<ApprovalFlags> {
        let waiting: Vec<String> = round
            .map(|r| r.awaiting().into_iter().map(|r| r.call_id).collect())
            .unwrap_or_default();
        let mut flags = ApprovalFlags {
            approve_all: self.approve_all,
            ..ApprovalFlags::default()
        };
        let mut approve_ids: Vec<&String> = self.approve_call.iter().collect();
        let mut deny_ids: Vec<&String> = self.deny_call.iter().collect();
        for (values, patterns, ids, flag) in [
            (
                &self.approve,
                &mut flags.approve,
                &mut approve_ids,
                "--approve",
            ),
            (&self.deny, &mut flags.deny, &mut deny_ids, "--deny"),
        ] {
            for value in values {
                let pattern = ToolPattern::new(value.as_str()).ok();
                let names_a_tool = pattern
                    .as_ref()
                    .is_some_and(|p| tools.iter().any(|t| p.matches(t)));
                if !names_a_tool && waiting.contains(value) {
                    ids.push(value);
                    continue;
                }
                match pattern {
                    Some(pattern) => patterns.push(pattern),
                    None => anyhow::bail!(
                        "{flag} {}: not a tool pattern (a-z, A-Z, 0-9, `_`, `-`, `.`, `@`, `+`, `*`){}",
                        escape_controls(value),
                        if round.is_some() {
                            "; for a call of the paused round use --approve-call ID / --deny-call ID"
                        } else {
                            ""
                        }
                    ),
                }
            }
        }
        for id in deny_ids {
            if !flags.decisions.iter().any(|(d, _)| d == id) {
                flags.decisions.push((
                    id.clone(),
                    Decision::deny("the operator", "--deny-call refused this call"),
                ));
            }
        }
        for id in approve_ids {
            if !flags.decisions.iter().any(|(d, _)| d == id) {
                flags.decisions.push((id.clone(), Decision::Approve));
            }
        }
        Ok(flags)
    }
}

/// How much of the arguments the prompt shows.
const SHOWN_ARGUMENT_BYTES: usize = 500;

/// Decides in `toolhost run`, in this order: `--deny`, `--approve` /
/// `--approve-all`, a tool approved "always" earlier in the run, the person
/// at the terminal; with no terminal, it defers (the run pauses, when it
/// can be saved) or refuses. Its patterns match the tool's name, never the
/// call's id.
pub struct CliApprover {
    flags: ApprovalFlags,
    interactive: bool,
    can_pause: bool,
    always: Arc<Mutex<BTreeSet<String>>>,
}

impl CliApprover {
    /// The approver for `flags`; `can_pause` when the run is saved
    /// (`--transcript`), so that a call nobody can decide now waits.
    pub fn new(flags: ApprovalFlags, can_pause: bool) -> Self {
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        Self {
            flags,
            interactive,
            can_pause,
            always: Arc::default(),
        }
    }

    fn covers(patterns: &[ToolPattern], request: &ApprovalRequest) -> bool {
        patterns.iter().any(|p| p.matches(&request.tool))
    }
}

impl Approver for CliApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Decision> {
        if Self::covers(&self.flags.deny, &request) {
            return ready(Decision::deny("the operator", "--deny covers this tool"));
        }
        if self.flags.approve_all || Self::covers(&self.flags.approve, &request) {
            return ready(Decision::Approve);
        }
        if self
            .always
            .lock()
            .is_ok_and(|always| always.contains(&request.tool))
        {
            return ready(Decision::Approve);
        }
        if !self.interactive {
            return ready(if self.can_pause {
                Decision::Defer
            } else {
                Decision::deny(
                    "toolhost run",
                    "this tool needs approval and nobody is at a terminal to give it; \
                     do not call it again in this run",
                )
            });
        }
        let always = Arc::clone(&self.always);
        Box::pin(async move {
            // Reading the terminal blocks: not on a runtime thread.
            let asked = request.clone();
            let answer = tokio::task::spawn_blocking(move || prompt(&asked))
                .await
                .unwrap_or(Answer::No);
            match answer {
                Answer::Yes => Decision::Approve,
                Answer::Always => {
                    if let Ok(mut always) = always.lock() {
                        always.insert(request.tool);
                    }
                    Decision::Approve
                }
                Answer::No => Decision::deny("the user at the terminal", "declined at the prompt"),
            }
        })
    }
}

fn ready(decision: Decision) -> BoxFuture<'static, Decision> {
    Box::pin(std::future::ready(decision))
}

enum Answer {
    Yes,
    No,
    Always,
}

/// Ask on stderr, read the answer from stdin. The tool name and arguments
/// are the model's text: clipped and escaped before they reach the
/// terminal. Anything but yes or always (end of input included) is no.
fn prompt(request: &ApprovalRequest) -> Answer {
    let arguments = clip(&request.arguments, SHOWN_ARGUMENT_BYTES);
    let clipped = if arguments.len() < request.arguments.len() {
        format!(" … ({} bytes in all)", request.arguments.len())
    } else {
        String::new()
    };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "toolhost: the model wants to call `{}` [{}] with {}{clipped}\n\
         allow it? [y]es / [n]o / [a]lways for this tool in this run: ",
        escape_controls(&request.tool),
        escape_controls(&request.call_id),
        escape_controls(&arguments),
    );
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return Answer::No;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "a" | "always" => Answer::Always,
        _ => Answer::No,
    }
}

/// Say which calls wait, and how to continue.
pub fn report_pending(outcome: &RunOutcome, transcript: Option<&Path>) {
    let waiting = outcome
        .pending
        .as_ref()
        .map(|round| round.awaiting())
        .unwrap_or_default();
    let running = outcome
        .pending
        .as_ref()
        .map(|round| round.running())
        .unwrap_or_default();
    for (call, task) in &running {
        eprintln!(
            "  {} [{}] runs as task {}",
            escape_controls(&call.name),
            escape_controls(&call.id),
            escape_controls(task)
        );
    }
    if waiting.is_empty() {
        if let Some(path) = transcript {
            eprintln!(
                "paused on {} running task(s); continue with: toolhost run --resume {}",
                running.len(),
                escape_controls(&path.display().to_string())
            );
        }
        return;
    }
    eprintln!("paused: {} call(s) wait for approval:", waiting.len());
    for request in &waiting {
        eprintln!(
            "  {} [{}] {}",
            escape_controls(&request.tool),
            escape_controls(&request.call_id),
            escape_controls(&clip(&request.arguments, 200))
        );
    }
    if let Some(path) = transcript {
        let ids: Vec<String> = waiting
            .iter()
            .map(|r| format!("--approve-call {}", escape_controls(&r.call_id)))
            .collect();
        eprintln!(
            "continue with: toolhost run --resume {} {} (or --deny-call CALL_ID)",
            escape_controls(&path.display().to_string()),
            ids.join(" ")
        );
    }
}
