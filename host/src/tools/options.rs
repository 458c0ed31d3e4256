//! [`ExecOptions`]: how one tool's calls are executed (outer timeout,
//! retries), and [`ExecOverrides`], the layers that change them per run and
//! per call.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ToolError, ToolErrorKind};

/// How the registry executes one tool's calls.
///
/// A tool's options come from its definition (a plugin manifest's `[exec]`,
/// a REST declaration, the `register_with` call); [`ExecOverrides`] change
/// them for a run or a call. The defaults are deliberately plain: no outer
/// timeout (a plugin already has its own sandbox deadline), no retries
/// (most failures repeat).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecOptions {
    /// An outer deadline for each attempt. `None`: only the tool's own
    /// limits apply. It never lengthens a plugin's sandbox deadline: the
    /// smaller of the two ends the call.
    #[serde(rename = "timeout_ms", serialize_with = "millis_opt")]
    pub timeout: Option<Duration>,
    /// How many times to retry a call that failed with a kind in
    /// `retry_on`.
    pub retries: u32,
    /// The pause before the first retry; [`Backoff`] says how later pauses
    /// grow.
    #[serde(rename = "retry_delay_ms", serialize_with = "millis")]
    pub retry_delay: Duration,
    /// How the pause grows from one retry to the next.
    pub backoff: Backoff,
    /// The error kinds worth a retry. Default: the transient ones
    /// ([`ToolErrorKind::is_transient`]: `timeout`, `busy`, `unavailable`).
    pub retry_on: Vec<ToolErrorKind>,
    /// Whether a person approves each call before it runs
    /// ([`approval`](crate::approval)). Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_approval: bool,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis_opt<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => millis(d, s),
        None => s.serialize_none(),
    }
}

impl Default for ExecOptions {
    fn default() -> Self {
        Self {
            timeout: None,
            retries: 0,
            retry_delay: Duration::from_millis(100),
            backoff: Backoff::default(),
            retry_on: ToolErrorKind::ALL
                .into_iter()
                .filter(|k| k.is_transient())
                .collect(),
            needs_approval: false,
        }
    }
}

/// How the pause between retries grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Backoff {
    /// The same `retry_delay` before every retry.
    Fixed,
    /// `retry_delay`, then twice that, four times, ... never more than
    /// [`MAX_RETRY_PAUSE`] (or `retry_delay`, if that is longer); each
    /// pause is drawn at random between half and all of it (jitter), so
    /// clients that failed together do not retry together. The default.
    #[default]
    Exponential,
}

impl Backoff {
    /// The stable snake_case name: `"fixed"` or `"exponential"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::Exponential => "exponential",
        }
    }
}

/// The longest pause [`Backoff::Exponential`] grows to, and the longest
/// `Retry-After` a retry waits for: a service asking for more is not
/// retried, and the model sees its error at once.
pub const MAX_RETRY_PAUSE: Duration = Duration::from_secs(10);

impl ExecOptions {
    /// Whether a call that failed with `error` after `attempt` retries
    /// (0 for the first try) is tried again, and after what pause.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolhost::tools::{Backoff, ExecOptions, ToolError, ToolErrorKind};
    ///
    /// let options = ExecOptions { retries: 2, backoff: Backoff::Fixed, ..ExecOptions::default() };
    /// let busy = ToolError::new(ToolErrorKind::Busy, "no free instance");
    /// assert_eq!(options.retry_pause(0, &busy), Some(Duration::from_millis(100)));
    /// assert_eq!(options.retry_pause(2, &busy), None); // retries used up
    /// assert_eq!(options.retry_pause(0, &ToolError::failed("no")), None); // not transient
    /// ```
    pub fn retry_pause(&self, attempt: u32, error: &ToolError) -> Option<Duration> {
        if attempt >= self.retries || !self.retry_on.contains(&error.kind) {
            return None;
        }
        let pause = match self.backoff {
            Backoff::Fixed => self.retry_delay,
            Backoff::Exponential => {
                let grown = self
                    .retry_delay
                    .saturating_mul(1u32.checked_shl(attempt).unwrap_or(u32::MAX))
                    .min(MAX_RETRY_PAUSE.max(self.retry_delay));
                let half = grown / 2;
                half + half.mul_f64(rand::random::<f64>())
            }
        };
        match error.retry_after {
            Some(asked) if asked > MAX_RETRY_PAUSE => None,
            Some(asked) => Some(pause.max(asked)),
            None => Some(pause),
        }
    }

    /// These options with every field that `overrides` sets replaced.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolhost::tools::{ExecOptions, ExecOverrides};
    ///
    /// let tool = ExecOptions { retries: 3, ..ExecOptions::default() };
    /// let run = ExecOverrides { timeout: Some(Duration::from_secs(2)), ..ExecOverrides::default() };
    /// let effective = tool.with(&run);
    /// assert_eq!(effective.timeout, Some(Duration::from_secs(2)));
    /// assert_eq!(effective.retries, 3);
    /// ```
    #[must_use]
    pub fn with(&self, overrides: &ExecOverrides) -> Self {
        Self {
            timeout: overrides.timeout.or(self.timeout),
            retries: overrides.retries.unwrap_or(self.retries),
            retry_delay: overrides.retry_delay.unwrap_or(self.retry_delay),
            backoff: overrides.backoff.unwrap_or(self.backoff),
            retry_on: overrides
                .retry_on
                .clone()
                .unwrap_or_else(|| self.retry_on.clone()),
            needs_approval: overrides.needs_approval.unwrap_or(self.needs_approval),
        }
    }
}

/// Changes to a tool's [`ExecOptions`] for a run
/// ([`RunnerConfig::tool_options`](crate::runner::RunnerConfig)) or a call
/// ([`CallContext::overrides`](super::CallContext)). Each field that is
/// `None` keeps the value of the layer below it; the layers, highest first:
/// the call, the run, the tool's definition, [`ExecOptions::default`].
///
/// An override can set a timeout but not remove one: a tool's own deadline
/// is a safety limit. And no timeout lengthens a plugin's sandbox deadline
/// (its manifest's `[limits] timeout_ms`): the smaller of the two ends the
/// call.
///
/// It is also the `[exec]` table of a plugin manifest, a `[[rest]]` or
/// `[[mcp]]` declaration, with durations in milliseconds:
///
/// ```toml
/// [exec]
/// timeout_ms = 1000        # outer deadline; never past [limits] timeout_ms
/// retries = 2              # at most ExecOverrides::MAX_RETRIES
/// retry_delay_ms = 100     # at most MAX_RETRY_PAUSE
/// backoff = "exponential"  # or "fixed"
/// retry_on = ["timeout", "busy", "unavailable"]
/// needs_approval = true    # a person approves each call first
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecOverrides {
    /// The outer deadline of each attempt.
    #[serde(rename = "timeout_ms", default, deserialize_with = "millis_in")]
    pub timeout: Option<Duration>,
    /// How many retries.
    #[serde(default)]
    pub retries: Option<u32>,
    /// The pause before the first retry.
    #[serde(rename = "retry_delay_ms", default, deserialize_with = "millis_in")]
    pub retry_delay: Option<Duration>,
    /// How the pause grows.
    #[serde(default)]
    pub backoff: Option<Backoff>,
    /// The kinds worth a retry; `Some(vec![])` retries nothing.
    #[serde(default)]
    pub retry_on: Option<Vec<ToolErrorKind>>,
    /// Whether a person approves each call before it runs.
    #[serde(default)]
    pub needs_approval: Option<bool>,
}

fn millis_in<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
}

/// An `[exec]` value out of range. The message names the key and what to
/// do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// More retries than [`ExecOverrides::MAX_RETRIES`].
    #[error("[exec] retries = {0}, the most allowed is {max}; lower it", max = ExecOverrides::MAX_RETRIES)]
    TooManyRetries(u32),
    /// A first retry pause over [`MAX_RETRY_PAUSE`].
    #[error("[exec] retry_delay_ms = {0}, the most allowed is {max}; lower it", max = MAX_RETRY_PAUSE.as_millis())]
    PauseTooLong(u128),
    /// A zero outer deadline.
    #[error(
        "[exec] timeout_ms = 0 would end every call at once; remove it or give a positive deadline"
    )]
    ZeroTimeout,
}

impl ExecOverrides {
    /// The most retries a declaration may ask for: each retry is another
    /// full call.
    pub const MAX_RETRIES: u32 = 10;

    /// The options these overrides make of [`ExecOptions::default`], as a
    /// declaration's `[exec]` table is read.
    ///
    /// # Errors
    ///
    /// A value out of range ([`ExecError`]).
    pub fn options(&self) -> Result<ExecOptions, ExecError> {
        if let Some(retries) = self.retries
            && retries > Self::MAX_RETRIES
        {
            return Err(ExecError::TooManyRetries(retries));
        }
        if let Some(delay) = self.retry_delay
            && delay > MAX_RETRY_PAUSE
        {
            return Err(ExecError::PauseTooLong(delay.as_millis()));
        }
        if self.timeout == Some(Duration::ZERO) {
            return Err(ExecError::ZeroTimeout);
        }
        Ok(ExecOptions::default().with(self))
    }

    /// Whether this changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `higher` on top of `self`: each field `higher` sets wins.
    #[must_use]
    pub fn then(&self, higher: &Self) -> Self {
        Self {
            timeout: higher.timeout.or(self.timeout),
            retries: higher.retries.or(self.retries),
            retry_delay: higher.retry_delay.or(self.retry_delay),
            backoff: higher.backoff.or(self.backoff),
            retry_on: higher.retry_on.clone().or_else(|| self.retry_on.clone()),
            needs_approval: higher.needs_approval.or(self.needs_approval),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(kind: ToolErrorKind) -> ToolError {
        ToolError::new(kind, "test")
    }

    fn retrying(backoff: Backoff, delay_ms: u64) -> ExecOptions {
        ExecOptions {
            retries: 40,
            retry_delay: Duration::from_millis(delay_ms),
            backoff,
            ..ExecOptions::default()
        }
    }

    #[test]
    fn fixed_backoff_waits_the_same_before_every_retry() {
        let options = retrying(Backoff::Fixed, 250);
        for attempt in [0, 1, 5, 39] {
            assert_eq!(
                options.retry_pause(attempt, &kind(ToolErrorKind::Busy)),
                Some(Duration::from_millis(250)),
                "attempt {attempt}"
            );
        }
        assert_eq!(options.retry_pause(40, &kind(ToolErrorKind::Busy)), None);
    }

    #[test]
    fn exponential_backoff_doubles_with_jitter_and_stops_at_the_cap() {
        let options = retrying(Backoff::Exponential, 100);
        for attempt in 0..40u32 {
            let full = Duration::from_millis(100)
                .saturating_mul(1u32.checked_shl(attempt).unwrap_or(u32::MAX))
                .min(MAX_RETRY_PAUSE);
            for _ in 0..20 {
                let pause = options
                    .retry_pause(attempt, &kind(ToolErrorKind::Timeout))
                    .expect("a retry");
                assert!(
                    pause >= full / 2 && pause <= full,
                    "attempt {attempt}: {pause:?} not in [{:?}, {full:?}]",
                    full / 2
                );
            }
        }
        // The pauses really grow: attempt 3's shortest beats attempt 0's longest.
        let late = options
            .retry_pause(3, &kind(ToolErrorKind::Timeout))
            .unwrap();
        assert!(late >= Duration::from_millis(400), "{late:?}");
        // And jitter spreads them: 50 draws are not all the same.
        let draws: std::collections::BTreeSet<Duration> = (0..50)
            .filter_map(|_| options.retry_pause(2, &kind(ToolErrorKind::Timeout)))
            .collect();
        assert!(draws.len() > 1, "{draws:?}");
    }

    #[test]
    fn a_retry_delay_longer_than_the_cap_is_kept_not_cut() {
        let options = retrying(Backoff::Exponential, 20_000);
        let pause = options.retry_pause(4, &kind(ToolErrorKind::Busy)).unwrap();
        assert!(pause >= Duration::from_secs(10) && pause <= Duration::from_secs(20));
    }

    #[test]
    fn only_the_kinds_in_retry_on_are_retried() {
        let default = retrying(Backoff::Fixed, 1);
        for k in ToolErrorKind::ALL {
            assert_eq!(
                default.retry_pause(0, &kind(k)).is_some(),
                k.is_transient(),
                "{k}"
            );
        }
        let only_failed = ExecOptions {
            retry_on: vec![ToolErrorKind::ToolFailed],
            ..retrying(Backoff::Fixed, 1)
        };
        assert!(
            only_failed
                .retry_pause(0, &kind(ToolErrorKind::ToolFailed))
                .is_some()
        );
        assert!(
            only_failed
                .retry_pause(0, &kind(ToolErrorKind::Timeout))
                .is_none()
        );
        let none = ExecOptions::default();
        assert!(none.retry_pause(0, &kind(ToolErrorKind::Busy)).is_none());
    }

    #[test]
    fn retry_after_is_waited_for_and_a_too_long_one_is_refused() {
        let options = retrying(Backoff::Fixed, 100);
        let unavailable = kind(ToolErrorKind::Unavailable);
        let asked = unavailable.clone().with_retry_after(Duration::from_secs(3));
        assert_eq!(options.retry_pause(0, &asked), Some(Duration::from_secs(3)));
        // A shorter Retry-After than our own pause keeps our pause.
        let short = unavailable
            .clone()
            .with_retry_after(Duration::from_millis(10));
        assert_eq!(
            options.retry_pause(0, &short),
            Some(Duration::from_millis(100))
        );
        let too_long = unavailable.with_retry_after(MAX_RETRY_PAUSE + Duration::from_secs(1));
        assert_eq!(options.retry_pause(0, &too_long), None);
        let at_cap = kind(ToolErrorKind::Unavailable).with_retry_after(MAX_RETRY_PAUSE);
        assert_eq!(options.retry_pause(0, &at_cap), Some(MAX_RETRY_PAUSE));
    }

    #[test]
    fn overrides_layer_call_over_run_over_the_tool() {
        let tool = ExecOptions {
            timeout: Some(Duration::from_secs(30)),
            retries: 1,
            ..ExecOptions::default()
        };
        let run = ExecOverrides {
            timeout: Some(Duration::from_secs(5)),
            retries: Some(4),
            ..ExecOverrides::default()
        };
        let call = ExecOverrides {
            retries: Some(0),
            retry_on: Some(vec![]),
            ..ExecOverrides::default()
        };
        let effective = tool.with(&run.then(&call));
        assert_eq!(effective.timeout, Some(Duration::from_secs(5)));
        assert_eq!(effective.retries, 0);
        assert!(effective.retry_on.is_empty());
        assert_eq!(effective.backoff, Backoff::Exponential);
        assert_eq!(tool.with(&ExecOverrides::default()), tool);
        assert!(ExecOverrides::default().is_empty());
        assert!(!call.is_empty());
    }
}
