//! Per-call resource limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The deadline of a guest call under `limits`: its task's, inside
/// [`crate::tasks::with_guest_deadline`].
pub(crate) fn call_timeout(limits: &Limits) -> Duration {
    crate::tasks::guest_deadline().unwrap_or(limits.timeout)
}

/// The budget of one tool call. Hitting any of them ends the call with a
/// [`ToolError`](crate::tools::ToolError) of the matching kind.
///
/// # Defaults, and why
///
/// | limit | default | why |
/// | --- | --- | --- |
/// | `fuel` | 2 000 000 000 | fuel is a deterministic CPU budget: wasm burns roughly 5-10 M units per ms, so this is ~0.2-0.4 s of pure compute, far more than a tool needs, and the same on a loaded or idle machine |
/// | `timeout` | 5 s | a wall-clock deadline catches what fuel does not (a guest that sleeps or waits); an LLM turn that waits longer for one tool is broken anyway |
/// | `memory` | 128 MiB | Rust tools need a few MiB; Python and JavaScript interpreters need tens of MiB |
/// | `output` | 1 MiB | no model context takes more; bigger output is a bug or an attack |
/// | `http_requests` | 16 | a tool that fetches a page or calls an API needs a few; a loop over links is a crawler |
/// | `http_response` | 1 MiB | all response bodies of one call together: like output, more than a model can use |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Fuel units for instantiation plus the call.
    pub fuel: u64,
    /// Wall-clock deadline, from the start of the call.
    #[serde(rename = "timeout_ms", with = "millis")]
    pub timeout: Duration,
    /// Cap on the guest's total linear memory, in bytes.
    pub memory_bytes: u64,
    /// Cap on the output JSON text, in bytes.
    pub output_bytes: u64,
    /// Most `wasi:http` requests one call may make (only plugins granted
    /// `http` make any).
    pub http_requests: u32,
    /// Cap on the bytes of all HTTP response bodies one call reads.
    pub http_response_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: 2_000_000_000,
            timeout: Duration::from_secs(5),
            memory_bytes: 128 << 20,
            output_bytes: 1 << 20,
            http_requests: 16,
            http_response_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// The most an operator lets any plugin ask for, unless configured
    /// otherwise: 100x the default CPU, 60 s, 1 GiB, 16 MiB of output, 256
    /// HTTP requests and 64 MiB of HTTP responses per call.
    pub fn default_ceiling() -> Self {
        Self {
            fuel: 200_000_000_000,
            timeout: Duration::from_secs(60),
            memory_bytes: 1 << 30,
            output_bytes: 16 << 20,
            http_requests: 256,
            http_response_bytes: 64 << 20,
        }
    }

    /// Whether every limit in `self` is within `ceiling`.
    ///
    /// # Errors
    ///
    /// The first limit above it, in the unit of its manifest key.
    pub fn check_ceiling(&self, ceiling: &Limits) -> Result<(), OverCeiling> {
        let over = |key: &'static str, asked: u64, max: u64| {
            if asked > max {
                Err(OverCeiling { key, asked, max })
            } else {
                Ok(())
            }
        };
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        over("fuel", self.fuel, ceiling.fuel)?;
        over("timeout_ms", ms(self.timeout), ms(ceiling.timeout))?;
        over(
            "memory_mb",
            self.memory_bytes >> 20,
            ceiling.memory_bytes >> 20,
        )?;
        over(
            "output_kb",
            self.output_bytes >> 10,
            ceiling.output_bytes >> 10,
        )?;
        over(
            "http_requests",
            u64::from(self.http_requests),
            u64::from(ceiling.http_requests),
        )?;
        over(
            "http_response_kb",
            self.http_response_bytes >> 10,
            ceiling.http_response_bytes >> 10,
        )
    }
}

/// A plugin's limit above the operator's ceiling (`limits.max` in the host
/// config), in the unit of its manifest key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{key}` = {asked}, the most allowed is {max}; lower it, or raise `limits.max.{key}` in the host config"
)]
pub struct OverCeiling {
    /// The manifest key, e.g. `memory_mb`.
    pub key: &'static str,
    /// What the plugin asked for.
    pub asked: u64,
    /// The ceiling.
    pub max: u64,
}

/// A limit written in a manifest or host config that no host can honour:
/// its unit conversion overflows, or it is above the absolute maximum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` = {value} is out of range: the most any host accepts is {max}")]
pub struct LimitError {
    /// The key as written, e.g. `memory_mb`.
    pub key: &'static str,
    /// The value as written.
    pub value: u64,
    /// The absolute maximum for that key, in the key's own unit.
    pub max: u64,
}

impl Limits {
    /// The absolute maximum of each limit, whatever an operator configures:
    /// a day of wall time, 64 GiB of memory, 1 GiB of output. Above these a
    /// value is a typo or an attack, and some would overflow the arithmetic
    /// a call does with them (a deadline of `now + u64::MAX ms` panics).
    pub const ABSOLUTE_MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
    /// See [`ABSOLUTE_MAX_TIMEOUT_MS`](Self::ABSOLUTE_MAX_TIMEOUT_MS).
    pub const ABSOLUTE_MAX_MEMORY_MB: u64 = 64 << 10;
    /// See [`ABSOLUTE_MAX_TIMEOUT_MS`](Self::ABSOLUTE_MAX_TIMEOUT_MS); also
    /// the most for `http_response_kb`.
    pub const ABSOLUTE_MAX_OUTPUT_KB: u64 = 1 << 20;
    /// See [`ABSOLUTE_MAX_TIMEOUT_MS`](Self::ABSOLUTE_MAX_TIMEOUT_MS).
    pub const ABSOLUTE_MAX_HTTP_REQUESTS: u32 = 1 << 16;

    /// A timeout in milliseconds as a [`Duration`], within the absolute maximum.
    ///
    /// # Errors
    ///
    /// `ms` is above [`ABSOLUTE_MAX_TIMEOUT_MS`](Self::ABSOLUTE_MAX_TIMEOUT_MS).
    pub fn timeout_from_ms(key: &'static str, ms: u64) -> Result<Duration, LimitError> {
        scaled(key, ms, Self::ABSOLUTE_MAX_TIMEOUT_MS, 1).map(Duration::from_millis)
    }

    /// A memory cap in MiB as bytes, within the absolute maximum.
    ///
    /// # Errors
    ///
    /// `mb` is above [`ABSOLUTE_MAX_MEMORY_MB`](Self::ABSOLUTE_MAX_MEMORY_MB).
    pub fn memory_from_mb(key: &'static str, mb: u64) -> Result<u64, LimitError> {
        scaled(key, mb, Self::ABSOLUTE_MAX_MEMORY_MB, 1 << 20)
    }

    /// An output cap in KiB as bytes, within the absolute maximum.
    ///
    /// # Errors
    ///
    /// `kb` is above [`ABSOLUTE_MAX_OUTPUT_KB`](Self::ABSOLUTE_MAX_OUTPUT_KB).
    pub fn output_from_kb(key: &'static str, kb: u64) -> Result<u64, LimitError> {
        scaled(key, kb, Self::ABSOLUTE_MAX_OUTPUT_KB, 1 << 10)
    }
}

impl Limits {
    /// A per-call request count, within the absolute maximum.
    ///
    /// # Errors
    ///
    /// `n` is above [`ABSOLUTE_MAX_HTTP_REQUESTS`](Self::ABSOLUTE_MAX_HTTP_REQUESTS).
    pub fn requests_from_count(key: &'static str, n: u32) -> Result<u32, LimitError> {
        let max = Self::ABSOLUTE_MAX_HTTP_REQUESTS;
        if n > max {
            return Err(LimitError {
                key,
                value: n.into(),
                max: max.into(),
            });
        }
        Ok(n)
    }
}

/// `value * unit`, refused above `max` (checked, so it can never wrap).
fn scaled(key: &'static str, value: u64, max: u64, unit: u64) -> Result<u64, LimitError> {
    let error = LimitError { key, value, max };
    if value > max {
        return Err(error);
    }
    value.checked_mul(unit).ok_or(error)
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_would_overflow_are_refused_by_name() {
        assert_eq!(Limits::memory_from_mb("memory_mb", 32), Ok(32 << 20));
        let e = Limits::memory_from_mb("memory_mb", 1 << 60).unwrap_err();
        assert_eq!(e.key, "memory_mb");
        assert!(e.to_string().contains("`memory_mb` = 1152921504606846976"));
        assert!(Limits::output_from_kb("output_kb", u64::MAX).is_err());
        assert!(Limits::timeout_from_ms("timeout_ms", u64::MAX).is_err());
        assert_eq!(
            Limits::timeout_from_ms("timeout_ms", 2000),
            Ok(Duration::from_secs(2))
        );
    }

    #[test]
    fn excess_names_the_first_limit_over_the_ceiling() {
        let ceiling = Limits::default();
        assert_eq!(Limits::default().check_ceiling(&ceiling), Ok(()));
        let asked = Limits {
            memory_bytes: 256 << 20,
            fuel: ceiling.fuel + 1,
            ..Limits::default()
        };
        let over = asked.check_ceiling(&ceiling).unwrap_err();
        assert_eq!(
            over,
            OverCeiling {
                key: "fuel",
                asked: ceiling.fuel + 1,
                max: ceiling.fuel
            }
        );
        let asked = Limits {
            memory_bytes: 256 << 20,
            ..Limits::default()
        };
        assert_eq!(
            asked.check_ceiling(&ceiling).unwrap_err().to_string(),
            "`memory_mb` = 256, the most allowed is 128; lower it, or raise `limits.max.memory_mb` in the host config"
        );
    }
}
