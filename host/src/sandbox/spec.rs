//! Limits as people write them (`[limits]` in a manifest, `[limits.default]`
//! and `[limits.max]` in the host config): friendly units, every field
//! optional.

use serde::Deserialize;

use super::{LimitError, Limits};

/// Limits as written in a manifest or host config, in friendly units. An
/// absent field means "the default".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Fuel units per call.
    pub fuel: Option<u64>,
    /// Deadline per call, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Linear memory cap, in MiB.
    pub memory_mb: Option<u64>,
    /// Output cap, in KiB.
    pub output_kb: Option<u64>,
    /// HTTP requests per call.
    pub http_requests: Option<u32>,
    /// Cap on all HTTP response bodies of one call, in KiB.
    pub http_response_kb: Option<u64>,
}

impl LimitsSpec {
    /// `base` with every field this spec sets replaced.
    ///
    /// # Errors
    ///
    /// A value whose conversion to bytes or a deadline would overflow, or
    /// that is above the absolute maximum (see [`Limits::ABSOLUTE_MAX_TIMEOUT_MS`]).
    pub fn apply_to(&self, base: Limits) -> Result<Limits, LimitError> {
        Ok(Limits {
            fuel: self.fuel.unwrap_or(base.fuel),
            timeout: match self.timeout_ms {
                Some(ms) => Limits::timeout_from_ms("timeout_ms", ms)?,
                None => base.timeout,
            },
            memory_bytes: match self.memory_mb {
                Some(mb) => Limits::memory_from_mb("memory_mb", mb)?,
                None => base.memory_bytes,
            },
            output_bytes: match self.output_kb {
                Some(kb) => Limits::output_from_kb("output_kb", kb)?,
                None => base.output_bytes,
            },
            http_requests: match self.http_requests {
                Some(n) => Limits::requests_from_count("http_requests", n)?,
                None => base.http_requests,
            },
            http_response_bytes: match self.http_response_kb {
                Some(kb) => Limits::output_from_kb("http_response_kb", kb)?,
                None => base.http_response_bytes,
            },
        })
    }
}
