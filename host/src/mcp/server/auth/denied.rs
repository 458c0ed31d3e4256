//! Why the access policy refused a call, and the JSON-RPC error a client
//! is answered with.

use std::time::Duration;

use super::Principal;

/// The JSON-RPC error code of a call over its rate limit (the one
/// ToolHive answers), with `retryAfterSeconds` in the error's data.
pub const RATE_LIMITED: i32 = -32029;

/// What of a [`Quota`] ran out, with the limit and what was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spent {
    /// Fuel.
    Fuel {
        /// What a window allows.
        limit: u64,
        /// What the principal's calls used in this one.
        used: u64,
    },
    /// Wall time.
    WallTime {
        /// What a window allows.
        limit: Duration,
        /// What the principal's calls used in this one.
        used: Duration,
    },
}

impl Spent {
    /// `fuel` or `wall time`.
    pub fn what(&self) -> &'static str {
        match self {
            Self::Fuel { .. } => "fuel",
            Self::WallTime { .. } => "wall time",
        }
    }

    fn limit(&self) -> String {
        match self {
            Self::Fuel { limit, .. } => limit.to_string(),
            Self::WallTime { limit, .. } => format!("{limit:?}"),
        }
    }

    fn used(&self) -> String {
        match self {
            Self::Fuel { used, .. } => used.to_string(),
            Self::WallTime { used, .. } => format!("{used:?}"),
        }
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
    /// The principal's calls spent what the rule allows in a window.
    #[error(
        "rule {rule:?} allows principal {subject:?} {limit} of {what} per {window:?}, and \
         its calls used {used} in this window; retry after {retry_after:.1?}, or ask the \
         server's operator for a larger quota",
        what = spent.what(), limit = spent.limit(), used = spent.used()
    )]
    QuotaSpent {
        /// The rule.
        rule: String,
        /// The principal's subject.
        subject: String,
        /// What ran out, and how much was used.
        spent: Spent,
        /// The rule's window.
        window: Duration,
        /// When the window ends.
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
    /// What kind of refusal, as metrics label it: `no_rule`, `tool`,
    /// `rate_limited`, `quota` or `busy`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoRule { .. } => "no_rule",
            Self::Tool { .. } => "tool",
            Self::RateLimited { .. } => "rate_limited",
            Self::QuotaSpent { .. } => "quota",
            Self::Busy { .. } => "busy",
        }
    }

    /// The rule that decided, if one did.
    pub fn rule(&self) -> Option<&str> {
        match self {
            Self::NoRule { .. } => None,
            Self::Tool { rule, .. }
            | Self::RateLimited { rule, .. }
            | Self::QuotaSpent { rule, .. }
            | Self::Busy { rule, .. } => Some(rule),
        }
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
        Denied::QuotaSpent {
            retry_after, spent, ..
        } => {
            data["retryAfterSeconds"] = serde_json::json!(retry_after.as_secs_f64().ceil());
            data["quota"] = serde_json::json!(spent.what());
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
