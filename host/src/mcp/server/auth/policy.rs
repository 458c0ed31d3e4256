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
struct Window {
    since: Instant,
    fuel: u64,
    wall: Duration,
}

/// The rules, and the rate buckets of the principals they cover.
#[derive(Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// (rule index, subject, tool) → bucket.
    buckets: Mutex<HashMap<(usize, String, String), Bucket>>,
    /// (rule index, subject) → calls running, for rules with a cap.
    running: Mutex<HashMap<(usize, String), u32>>,
    /// (rule index, subject) → what its calls spent, for rules with a
    /// quota.
    spent: Mutex<HashMap<(usize, String), Window>>,
}

/// A call admitted by a [`Policy`]: while it is held, the call counts
/// against its rule's cap on calls at once.
#[derive(Debug)]
#[must_use = "the call counts as running while the permit is held"]
pub struct Permit {
    held: Option<(Arc<Policy>, (usize, String))>,
    /// The quota the call is charged to, if its rule has one.
    charged: Option<(Arc<Policy>, (usize, String), Quota)>,
}

impl Permit {
    /// Charge what the call spent (as the sandbox measured it: fuel, and
    /// wall time) to its principal's quota, if its rule has one.
    pub fn charge(&self, fuel: u64, wall: Duration) {
        self.charge_at(fuel, wall, Instant::now());
    }

    fn charge_at(&self, fuel: u64, wall: Duration, now: Instant) {
        let Some((policy, key, quota)) = &self.charged else {
            return;
        };
        let mut spent = policy.spent.lock().unwrap_or_else(|e| e.into_inner());
        let entry = spent.entry(key.clone()).or_insert(Window {
            since: now,
            fuel: 0,
            wall: Duration::ZERO,
        });
        if now.duration_since(entry.since) >= quota.window {
            // The window the call started in has ended: it counts in the next.
            *entry = Window {
                since: now,
                fuel: 0,
                wall: Duration::ZERO,
            };
        }
        entry.fuel = entry.fuel.saturating_add(fuel);
        entry.wall = entry.wall.saturating_add(wall);
    }
}

impl Permit {
    /// Run `call` and charge what the sandbox measured of it, and the wall
    /// time it took, to the principal's quota.
    pub(in crate::mcp::server) async fn charging<F: std::future::Future>(
        self,
        call: F,
    ) -> F::Output {
        let started = Instant::now();
        let (output, used) = crate::telemetry::measured(call).await;
        self.charge(used.fuel_used.unwrap_or(0), started.elapsed());
        output
    }
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
        let rule = policy.rule_name(principal).unwrap_or("");
        metrics.record_policy(
            rule,
            decided.as_ref().map_or_else(Denied::kind, |_| "allowed"),
        );
    }
    decided
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((policy, key)) = self.held.take() {
            let mut running = policy.running.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = running.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    running.remove(&key);
                }
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

/// The most buckets kept; past it, full ones are dropped (a full bucket
/// is what a new one would be).
const MAX_BUCKETS: usize = 100_000;

impl Policy {
    /// No rules: nobody may do anything.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `rule`, after those added before (the first match decides).
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
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

    fn admit_at(
        self: &Arc<Self>,
        principal: &Principal,
        tool: &str,
        now: Instant,
    ) -> Result<Permit, Denied> {
        let charged = self.within_quota(principal, now)?;
        let mut permit = self.start(principal)?;
        self.take_token(principal, tool, now)?;
        permit.charged = charged;
        Ok(permit)
    }

    /// Whether what `principal`'s calls spent in its window leaves room for
    /// one more (and where to charge it), for a rule with a quota.
    #[allow(clippy::type_complexity)]
    fn within_quota(
        self: &Arc<Self>,
        principal: &Principal,
        now: Instant,
    ) -> Result<Option<(Arc<Policy>, (usize, String), Quota)>, Denied> {
        let Some((index, rule)) = self.rule_for(principal) else {
            return Ok(None);
        };
        let Some(quota) = rule.quota else {
            return Ok(None);
        };
        let key = (index, principal.subject().to_owned());
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        if spent.len() >= MAX_BUCKETS {
            spent.retain(|_, s| now.duration_since(s.since) < quota.window);
        }
        if let Some(s) = spent.get(&key) {
            let elapsed = now.duration_since(s.since);
            if elapsed >= quota.window {
                spent.remove(&key);
            } else {
                let over = match (quota.fuel, quota.wall_time) {
                    (Some(limit), _) if s.fuel >= limit => Some(Spent::Fuel {
                        limit,
                        used: s.fuel,
                    }),
                    (_, Some(limit)) if s.wall >= limit => Some(Spent::WallTime {
                        limit,
                        used: s.wall,
                    }),
                    _ => None,
                };
                if let Some(spent) = over {
                    return Err(Denied::QuotaSpent {
                        rule: rule.name.clone(),
                        subject: key.1,
                        spent,
                        window: quota.window,
                        retry_after: quota.window - elapsed,
                    });
                }
            }
        }
        Ok(Some((Arc::clone(self), key, quota)))
    }

    /// Count one more call of `principal` running, within its rule's cap.
    fn start(self: &Arc<Self>, principal: &Principal) -> Result<Permit, Denied> {
        let Some((index, rule)) = self.rule_for(principal) else {
            return Ok(Permit {
                held: None,
                charged: None,
            });
        };
        let Some(max) = rule.max_concurrent else {
            return Ok(Permit {
                held: None,
                charged: None,
            });
        };
        let key = (index, principal.subject().to_owned());
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let n = running.entry(key.clone()).or_insert(0);
        if *n >= max {
            return Err(Denied::Busy {
                rule: rule.name.clone(),
                subject: key.1,
                max,
            });
        }
        *n += 1;
        Ok(Permit {
            held: Some((Arc::clone(self), key)),
            charged: None,
        })
    }

    fn take_token(&self, principal: &Principal, tool: &str, now: Instant) -> Result<(), Denied> {
        let subject = principal.subject().to_owned();
        let Some((index, rule)) = self.rule_for(principal) else {
            return Err(Denied::NoRule { subject });
        };
        if !rule.allows(tool) {
            return Err(Denied::Tool {
                rule: rule.name.clone(),
                tool: tool.to_owned(),
                subject,
            });
        }
        let Some(rate) = rule.rate else {
            return Ok(());
        };
        let burst = f64::from(rate.burst.max(1));
        let per_sec = f64::from(rate.per_minute) / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_BUCKETS {
            buckets
                .retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec < burst);
        }
        let bucket = buckets
            .entry((index, subject.clone(), tool.to_owned()))
            .or_insert(Bucket {
                tokens: burst,
                at: now,
            });
        bucket.tokens =
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * per_sec).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let retry_after = if per_sec > 0.0 {
            Duration::from_secs_f64((1.0 - bucket.tokens) / per_sec)
        } else {
            Duration::MAX
        };
        Err(Denied::RateLimited {
            rule: rule.name.clone(),
            tool: tool.to_owned(),
            subject,
            per_minute: rate.per_minute,
            retry_after,
        })
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
