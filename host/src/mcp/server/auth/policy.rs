//! Who may see and call which tools, and how often: rules matched against
//! the [`Principal`] a request was verified as.
//!
//! A [`Policy`] is a list of [`Rule`]s; the first whose [`Who`] matches a
//! principal decides for it. The rule's tool patterns say what the
//! principal sees in `tools/list` and may call; its rate (a token bucket
//! per principal, per tool) says how often; its cap how many calls a
//! principal may have running at once. A principal no rule matches
//! sees nothing and may call nothing. Requests without a principal (stdio,
//! or HTTP without a verifier) are not under the policy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::approval::ToolPattern;

use super::Principal;

/// The JSON-RPC error code of a call over its rate limit (the one
/// ToolHive answers), with `retryAfterSeconds` in the error's data.
pub const RATE_LIMITED: i32 = -32029;

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
}

impl Who {
    fn matches(&self, principal: &Principal) -> bool {
        match self {
            Self::Anyone => true,
            Self::Subject(s) => principal.subject() == s,
            Self::ClientId(c) => principal.client_id() == Some(c.as_str()),
            Self::Scope(s) => principal.has_scope(s),
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

/// What a principal may do.
#[derive(Debug, Clone)]
pub struct Rule {
    name: String,
    who: Who,
    tools: Vec<ToolPattern>,
    rate: Option<Rate>,
    max_concurrent: Option<u32>,
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
        }
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

/// Why a call was refused. The text names the rule and what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Denied {
    /// No rule matches the principal.
    #[error(
        "no access rule covers principal {subject:?}; ask the server's operator to add one \
         (a rule for the subject, client id or a scope)"
    )]
    NoRule {
        /// The principal's subject.
        subject: String,
    },
    /// The principal's rule does not allow the tool.
    #[error(
        "rule {rule:?} does not allow tool {tool:?} for principal {subject:?}; ask the \
         server's operator to add the tool to the rule, or use a token a rule allows it to"
    )]
    Tool {
        /// The rule.
        rule: String,
        /// The tool.
        tool: String,
        /// The principal's subject.
        subject: String,
    },
    /// Over the rule's rate.
    #[error(
        "rule {rule:?} allows principal {subject:?} {per_minute} call(s) a minute of tool \
         {tool:?}; retry after {retry_after:.1?}"
    )]
    RateLimited {
        /// The rule.
        rule: String,
        /// The tool.
        tool: String,
        /// The principal's subject.
        subject: String,
        /// The rule's rate.
        per_minute: u32,
        /// When one more call will be allowed.
        retry_after: Duration,
    },
    /// As many calls running as the rule allows at once.
    #[error(
        "rule {rule:?} allows principal {subject:?} {max} call(s) at once; retry once one \
         of them has finished"
    )]
    Busy {
        /// The rule.
        rule: String,
        /// The principal's subject.
        subject: String,
        /// The rule's cap.
        max: u32,
    },
}

impl Denied {
    /// The rule that decided, if one did.
    pub fn rule(&self) -> Option<&str> {
        match self {
            Self::NoRule { .. } => None,
            Self::Tool { rule, .. } | Self::RateLimited { rule, .. } | Self::Busy { rule, .. } => {
                Some(rule)
            }
        }
    }
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The rules, and the rate buckets of the principals they cover.
#[derive(Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// (rule index, subject, tool) → bucket.
    buckets: Mutex<HashMap<(usize, String, String), Bucket>>,
    /// (rule index, subject) → calls running, for rules with a cap.
    running: Mutex<HashMap<(usize, String), u32>>,
}

/// A call admitted by a [`Policy`]: while it is held, the call counts
/// against its rule's cap on calls at once.
#[derive(Debug)]
#[must_use = "the call counts as running while the permit is held"]
pub struct Permit {
    held: Option<(Arc<Policy>, (usize, String))>,
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
        let permit = self.start(principal)?;
        self.take_token(principal, tool, now)?;
        Ok(permit)
    }

    /// Count one more call of `principal` running, within its rule's cap.
    fn start(self: &Arc<Self>, principal: &Principal) -> Result<Permit, Denied> {
        let Some((index, rule)) = self.rule_for(principal) else {
            return Ok(Permit { held: None });
        };
        let Some(max) = rule.max_concurrent else {
            return Ok(Permit { held: None });
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

/// The JSON-RPC error a refused call is answered with: `-32029` and
/// `retryAfterSeconds` for a rate limit, invalid-request (`-32600`)
/// naming the rule otherwise. The decision is logged with the principal.
pub(in crate::mcp::server) fn refusal(denied: &Denied, principal: &Principal) -> rmcp::ErrorData {
    tracing::info!(
        principal = principal.subject(),
        client_id = principal.client_id().unwrap_or(""),
        rule = denied.rule().unwrap_or(""),
        "call refused by the access policy: {denied}"
    );
    let mut data = serde_json::json!({
        "principal": principal.subject(),
        "rule": denied.rule(),
    });
    let code = match denied {
        Denied::RateLimited { retry_after, .. } => {
            data["retryAfterSeconds"] = serde_json::json!(retry_after.as_secs_f64().ceil());
            RATE_LIMITED
        }
        Denied::Busy { .. } => {
            data["retryAfterSeconds"] = serde_json::json!(1);
            RATE_LIMITED
        }
        Denied::NoRule { .. } | Denied::Tool { .. } => -32600,
    };
    rmcp::ErrorData::new(rmcp::model::ErrorCode(code), denied.to_string(), Some(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &str) -> ToolPattern {
        ToolPattern::new(p).unwrap()
    }

    fn policy() -> Arc<Policy> {
        let policy = Policy::new()
            .rule(Rule::new(
                "admins",
                Who::Scope("admin".into()),
                [pattern("*")],
            ))
            .rule(
                Rule::new("agents", Who::ClientId("agent".into()), [pattern("calc_*")]).rate(
                    Rate {
                        per_minute: 60,
                        burst: 2,
                    },
                ),
            );
        Arc::new(policy)
    }

    #[test]
    fn the_first_matching_rule_decides_what_is_seen() {
        let p = policy();
        let admin = Principal::new("root").with_scopes(["admin"]);
        let agent = Principal::new("bot").with_client_id("agent");
        let stranger = Principal::new("eve");
        assert!(p.visible(&admin, "fs_delete"));
        assert!(p.visible(&agent, "calc_add") && !p.visible(&agent, "fs_delete"));
        assert!(!p.visible(&stranger, "calc_add"));
        let denied = p.admit(&agent, "fs_delete").unwrap_err();
        assert_eq!(denied.rule(), Some("agents"));
        assert!(denied.to_string().contains("operator"), "{denied}");
        assert!(matches!(
            p.admit(&stranger, "calc_add"),
            Err(Denied::NoRule { .. })
        ));
    }

    #[test]
    fn a_principal_over_its_rate_is_told_when_to_retry_while_others_are_served() {
        let p = policy();
        let bot = Principal::new("bot").with_client_id("agent");
        let other = Principal::new("bot-2").with_client_id("agent");
        let t0 = Instant::now();
        assert!(p.admit_at(&bot, "calc_add", t0).is_ok());
        assert!(p.admit_at(&bot, "calc_add", t0).is_ok());
        let Err(Denied::RateLimited { retry_after, .. }) = p.admit_at(&bot, "calc_add", t0) else {
            panic!("the third call in a burst of 2 is refused");
        };
        assert_eq!(retry_after.as_secs(), 1);
        // Another principal, and another tool, have buckets of their own.
        assert!(p.admit_at(&other, "calc_add", t0).is_ok());
        assert!(p.admit_at(&bot, "calc_mul", t0).is_ok());
        // One token a second comes back.
        assert!(
            p.admit_at(&bot, "calc_add", t0 + Duration::from_secs(1))
                .is_ok()
        );
    }

    #[test]
    fn a_principal_at_its_cap_waits_for_a_call_to_finish_while_others_run() {
        let p = Arc::new(
            Policy::new()
                .rule(Rule::new("one-at-a-time", Who::Anyone, [pattern("*")]).max_concurrent(1)),
        );
        let alice = Principal::new("alice");
        let bob = Principal::new("bob");
        let first = p.admit(&alice, "slow").unwrap();
        let Err(busy) = p.admit(&alice, "other") else {
            panic!("a second call at once is refused");
        };
        assert!(matches!(busy, Denied::Busy { max: 1, .. }), "{busy}");
        let _bobs = p.admit(&bob, "slow").unwrap();
        drop(first);
        assert!(p.admit(&alice, "other").is_ok());
    }
}
