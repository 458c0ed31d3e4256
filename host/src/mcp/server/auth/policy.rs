//! Who may see and call which tools, and how often: rules matched against
//! the [`Principal`] a request was verified as.
//!
//! A [`Policy`] is a list of [`Rule`]s; the first whose [`Who`] matches a
//! principal decides for it. The rule's tool patterns say what the
//! principal sees in `tools/list` and may call; its rate (a token bucket
//! per principal, per tool) says how often; its cap how many calls a
//! principal may have running at once; its [`Quota`] how much fuel and
//! wall time the principal's calls may spend in a window, as the sandbox
//! measured them (what no gateway in front of a server can know). A
//! principal no rule matches sees nothing and may call nothing. Requests
//! without a principal (stdio, or HTTP without a verifier) are not under
//! the policy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::approval::ToolPattern;

use super::Principal;
use super::denied::{Denied, Spent};

/// Which principals a [`Rule`] is for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Who {
    /// Every principal.
    Anyone,
    /// The principal with this subject (`sub`).
    Subject(String),
    /// Principals acting through this client (`client_id`).
    ClientId(String),
    /// Principals granted this scope.
    Scope(String),
    /// Principals whose token's claim `name` is `value`, or a list that
    /// holds it (e.g. `groups` holding `admins`).
    Claim {
        /// The claim's name.
        name: String,
        /// The string it must be, or hold.
        value: String,
    },
}

impl Who {
    fn matches(&self, principal: &Principal) -> bool {
        match self {
            Self::Anyone => true,
            Self::Subject(s) => principal.subject() == s,
            Self::ClientId(c) => principal.client_id() == Some(c.as_str()),
            Self::Scope(s) => principal.has_scope(s),
            Self::Claim { name, value } => match principal.claim(name) {
                Some(serde_json::Value::String(s)) => s == value,
                Some(serde_json::Value::Array(all)) => all.iter().any(|v| v == value.as_str()),
                _ => false,
            },
        }
    }
}

/// A token bucket: `burst` calls at once, refilled at `per_minute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls a minute, on average.
    pub per_minute: u32,
    /// Calls at once (the bucket's size); at least 1.
    pub burst: u32,
}

/// What a principal's calls may spend in a window, summed over its calls
/// of every tool: fuel (what the sandbox counted of the guests' work) and
/// wall time (from admission to answer, any tool). A call is admitted
/// while what the window holds is under both; the call that crosses a
/// line runs to its own limits, and the principal's next ones are refused
/// until the window ends. A window starts when the first call after the
/// last window is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// How long a window lasts; more than zero.
    pub window: Duration,
    /// Fuel a window allows, if fuel is counted.
    pub fuel: Option<u64>,
    /// Wall time a window allows, if it is counted.
    pub wall_time: Option<Duration>,
}

/// What a principal may do.
#[derive(Debug, Clone)]
pub struct Rule {
    name: String,
    who: Who,
    tools: Vec<ToolPattern>,
    rate: Option<Rate>,
    max_concurrent: Option<u32>,
    quota: Option<Quota>,
}

impl Rule {
    /// A rule called `name` (named in denials) for `who`, allowing the
    /// tools `tools` names, with no rate limit.
    pub fn new(
        name: impl Into<String>,
        who: Who,
        tools: impl IntoIterator<Item = ToolPattern>,
    ) -> Self {
        Self {
            name: name.into(),
            who,
            tools: tools.into_iter().collect(),
            rate: None,
            max_concurrent: None,
            quota: None,
        }
    }

    /// Let each principal's calls spend at most `quota` in a window.
    #[must_use]
    pub fn quota(mut self, quota: Quota) -> Self {
        self.quota = Some(quota);
        self
    }

    /// Let each principal have at most `calls` calls running at once.
    #[must_use]
    pub fn max_concurrent(mut self, calls: u32) -> Self {
        self.max_concurrent = Some(calls);
        self
    }

    /// Limit each principal's calls of each tool to `rate`.
    #[must_use]
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn allows(&self, tool: &str) -> bool {
        self.tools.iter().any(|p| p.matches(tool))
    }
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// What a principal's calls spent in its current window.
#[derive(Clone, Copy)]
struct Window {
    since: Instant,
    fuel: u64,
    wall: Duration,
}

/// What a policy keeps of one principal under one rule: its calls
/// running, its quota's window, its rate buckets (by tool).
#[derive(Default)]
struct Ledger {
    running: u32,
    window: Option<Window>,
    buckets: HashMap<String, Bucket>,
}

impl Ledger {
    /// Whether the ledger says nothing a fresh one would not: no call
    /// running, no window open, every bucket full.
    fn idle(&self, rule: &Rule, now: Instant) -> bool {
        self.running == 0
            && self.window.is_none_or(|w| {
                rule.quota
                    .is_none_or(|q| now.duration_since(w.since) >= q.window)
            })
            && rule.rate.is_none_or(|rate| {
                self.buckets
                    .values()
                    .all(|b| refilled(b, rate, now) >= f64::from(rate.burst.max(1)))
            })
    }
}

/// `bucket`'s tokens at `now`, refilled at `rate` since it was last used.
fn refilled(bucket: &Bucket, rate: Rate, now: Instant) -> f64 {
    let per_sec = f64::from(rate.per_minute) / 60.0;
    (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * per_sec)
        .min(f64::from(rate.burst.max(1)))
}

/// The rules, and what they keep of the principals they cover.
#[derive(Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// By rule (index): subject → its ledger, for rules with a rate, a
    /// cap or a quota. One lock a rule: an admission takes it once.
    ledgers: Vec<Mutex<HashMap<String, Ledger>>>,
}

/// A call admitted by a [`Policy`]: while it is held, the call counts
/// against its rule's cap on calls at once.
#[derive(Debug)]
#[must_use = "the call counts as running while the permit is held"]
pub struct Permit {
    /// The policy, the rule's index and the subject, when its rule keeps
    /// a ledger.
    kept: Option<(Arc<Policy>, usize, String)>,
    /// Whether the call counts as running (its rule has a cap), until
    /// the permit is dropped.
    running: bool,
}

impl Permit {
    /// Charge what the call spent (as the sandbox measured it: fuel, and
    /// wall time) to its principal's quota, if its rule has one.
    pub fn charge(&self, fuel: u64, wall: Duration) {
        self.charge_at(fuel, wall, Instant::now());
    }

    fn charge_at(&self, fuel: u64, wall: Duration, now: Instant) {
        let Some((policy, index, subject)) = &self.kept else {
            return;
        };
        let Some(quota) = policy.rules[*index].quota else {
            return;
        };
        let mut ledgers = policy.ledgers[*index]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let ledger = ledger(&mut ledgers, subject);
        let window = match ledger.window {
            // The window the call started in has ended: it counts in the next.
            Some(w) if now.duration_since(w.since) < quota.window => w,
            _ => Window {
                since: now,
                fuel: 0,
                wall: Duration::ZERO,
            },
        };
        ledger.window = Some(Window {
            fuel: window.fuel.saturating_add(fuel),
            wall: window.wall.saturating_add(wall),
            ..window
        });
    }

    /// Whether the call's rule has a quota (what it spent is measured).
    fn charged(&self) -> bool {
        self.kept
            .as_ref()
            .is_some_and(|(policy, index, _)| policy.rules[*index].quota.is_some())
    }

    /// Run `call` and charge what the sandbox measured of it, and the wall
    /// time it took, to the principal's quota.
    pub(in crate::mcp::server) async fn charging<F: std::future::Future>(
        self,
        call: F,
    ) -> F::Output {
        if !self.charged() {
            return call.await;
        }
        let started = Instant::now();
        // Boxed: the call's future is large, and measuring it would move
        // it, whole, a few times more.
        let (output, used) = crate::telemetry::measured(Box::pin(call)).await;
        self.charge(used.fuel_used.unwrap_or(0), started.elapsed());
        output
    }

    /// Count in `metrics` that `policy` allowed the call, by rule.
    pub(in crate::mcp::server) fn count(
        &self,
        policy: &Policy,
        principal: &Principal,
        metrics: &crate::telemetry::Metrics,
    ) {
        let rule = match &self.kept {
            Some((policy, index, _)) => policy.rules[*index].name(),
            None => policy.rule_name(principal).unwrap_or(""),
        };
        metrics.record_policy(rule, "allowed");
    }
}

/// `subject`'s ledger in `ledgers`, made if it has none (the subject
/// copied only then).
fn ledger<'a>(ledgers: &'a mut HashMap<String, Ledger>, subject: &str) -> &'a mut Ledger {
    if !ledgers.contains_key(subject) {
        ledgers.insert(subject.to_owned(), Ledger::default());
    }
    ledgers.get_mut(subject).expect("the ledger was just made")
}

/// [`Policy::admit`], with the decision counted in `metrics` (by rule).
pub(in crate::mcp::server) fn decide(
    policy: &Arc<Policy>,
    principal: &Principal,
    tool: &str,
    metrics: Option<&crate::telemetry::Metrics>,
) -> Result<Permit, Denied> {
    let decided = policy.admit(principal, tool);
    if let Some(metrics) = metrics {
        match &decided {
            Ok(permit) => permit.count(policy, principal, metrics),
            Err(denied) => {
                metrics.record_policy(policy.rule_name(principal).unwrap_or(""), denied.kind());
            }
        }
    }
    decided
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.running {
            return;
        }
        if let Some((policy, index, subject)) = &self.kept {
            let mut ledgers = policy.ledgers[*index]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(ledger) = ledgers.get_mut(subject.as_str()) {
                ledger.running = ledger.running.saturating_sub(1);
            }
        }
    }
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("rules", &self.rules)
            .finish()
    }
}

/// The most principals a rule keeps a ledger of, and the most buckets a
/// principal keeps; past either, idle ones (what a new one would be) are
/// dropped.
const MAX_LEDGERS: usize = 100_000;

impl Policy {
    /// No rules: nobody may do anything.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `rule`, after those added before (the first match decides).
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self.ledgers.push(Mutex::default());
        self
    }

    fn rule_for(&self, principal: &Principal) -> Option<(usize, &Rule)> {
        self.rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.who.matches(principal))
    }

    /// The name of the rule that decides for `principal`, if one does.
    pub fn rule_name(&self, principal: &Principal) -> Option<&str> {
        self.rule_for(principal).map(|(_, rule)| rule.name())
    }

    /// Whether `principal` sees `tool` in `tools/list`.
    pub fn visible(&self, principal: &Principal, tool: &str) -> bool {
        self.rule_for(principal)
            .is_some_and(|(_, r)| r.allows(tool))
    }

    /// Whether `principal` may call `tool` now; a call allowed takes one
    /// token of its bucket, and counts as running until the [`Permit`]
    /// is dropped.
    ///
    /// # Errors
    ///
    /// [`Denied`], naming the rule.
    pub fn admit(self: &Arc<Self>, principal: &Principal, tool: &str) -> Result<Permit, Denied> {
        self.admit_at(principal, tool, Instant::now())
    }

    /// What [`admit`](Self::admit) decides at `now`: the rule that
    /// matches, its tools, then (under one lock) its quota, its cap and
    /// its rate; a call is counted only when all admit it.
    fn admit_at(
        self: &Arc<Self>,
        principal: &Principal,
        tool: &str,
        now: Instant,
    ) -> Result<Permit, Denied> {
        let subject = principal.subject();
        let Some((index, rule)) = self.rule_for(principal) else {
            return Err(Denied::NoRule {
                subject: subject.to_owned(),
            });
        };
        if !rule.allows(tool) {
            return Err(Denied::Tool {
                rule: rule.name.clone(),
                tool: tool.to_owned(),
                subject: subject.to_owned(),
            });
        }
        if rule.rate.is_none() && rule.max_concurrent.is_none() && rule.quota.is_none() {
            return Ok(Permit {
                kept: None,
                running: false,
            });
        }
        let mut ledgers = self.ledgers[index]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if ledgers.len() >= MAX_LEDGERS && !ledgers.contains_key(subject) {
            ledgers.retain(|_, l| !l.idle(rule, now));
        }
        let ledger = ledger(&mut ledgers, subject);
        rule.within_quota(ledger, subject, now)?;
        if let Some(max) = rule.max_concurrent
            && ledger.running >= max
        {
            return Err(Denied::Busy {
                rule: rule.name.clone(),
                subject: subject.to_owned(),
                max,
            });
        }
        if let Some(rate) = rule.rate {
            rule.take_token(ledger, rate, (subject, tool), now)?;
        }
        let running = rule.max_concurrent.is_some();
        if running {
            ledger.running += 1;
        }
        // A permit keeps its ledger's place only to give back or charge.
        let kept = (running || rule.quota.is_some())
            .then(|| (Arc::clone(self), index, subject.to_owned()));
        Ok(Permit { kept, running })
    }
}

impl Rule {
    /// Whether what `ledger`'s calls spent in its window leaves room for
    /// one more, for a rule with a quota.
    fn within_quota(&self, ledger: &mut Ledger, subject: &str, now: Instant) -> Result<(), Denied> {
        let (Some(quota), Some(window)) = (self.quota, ledger.window) else {
            return Ok(());
        };
        let elapsed = now.duration_since(window.since);
        if elapsed >= quota.window {
            ledger.window = None;
            return Ok(());
        }
        let over = match (quota.fuel, quota.wall_time) {
            (Some(limit), _) if window.fuel >= limit => Some(Spent::Fuel {
                limit,
                used: window.fuel,
            }),
            (_, Some(limit)) if window.wall >= limit => Some(Spent::WallTime {
                limit,
                used: window.wall,
            }),
            _ => None,
        };
        match over {
            Some(spent) => Err(Denied::QuotaSpent {
                rule: self.name.clone(),
                subject: subject.to_owned(),
                spent,
                window: quota.window,
                retry_after: quota.window - elapsed,
            }),
            None => Ok(()),
        }
    }

    /// Take a token of `tool`'s bucket in `ledger`, refilled at `rate`.
    fn take_token(
        &self,
        ledger: &mut Ledger,
        rate: Rate,
        (subject, tool): (&str, &str),
        now: Instant,
    ) -> Result<(), Denied> {
        let burst = f64::from(rate.burst.max(1));
        if ledger.buckets.len() >= MAX_LEDGERS && !ledger.buckets.contains_key(tool) {
            ledger.buckets.retain(|_, b| refilled(b, rate, now) < burst);
        }
        if !ledger.buckets.contains_key(tool) {
            let full = Bucket {
                tokens: burst,
                at: now,
            };
            ledger.buckets.insert(tool.to_owned(), full);
        }
        let bucket = ledger
            .buckets
            .get_mut(tool)
            .expect("the bucket was just made");
        bucket.tokens = refilled(bucket, rate, now);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let per_sec = f64::from(rate.per_minute) / 60.0;
        let retry_after = if per_sec > 0.0 {
            Duration::from_secs_f64((1.0 - bucket.tokens) / per_sec)
        } else {
            Duration::MAX
        };
        Err(Denied::RateLimited {
            rule: self.name.clone(),
            tool: tool.to_owned(),
            subject: subject.to_owned(),
            per_minute: rate.per_minute,
            retry_after,
        })
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
