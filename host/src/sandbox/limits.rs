//! Per-call resource limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

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
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: 2_000_000_000,
            timeout: Duration::from_secs(5),
            memory_bytes: 128 << 20,
            output_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// The most an operator lets any plugin ask for, unless configured
    /// otherwise: 100x the default CPU, 60 s, 1 GiB, 16 MiB of output.
    pub fn default_ceiling() -> Self {
        Self {
            fuel: 200_000_000_000,
            timeout: Duration::from_secs(60),
            memory_bytes: 1 << 30,
            output_bytes: 16 << 20,
        }
    }

    /// The first limit in `self` that is above `ceiling`, as
    /// `(name, asked, allowed)`.
    pub fn first_excess(&self, ceiling: &Limits) -> Option<(&'static str, String, String)> {
        if self.fuel > ceiling.fuel {
            return Some(("fuel", self.fuel.to_string(), ceiling.fuel.to_string()));
        }
        if self.timeout > ceiling.timeout {
            return Some((
                "timeout_ms",
                self.timeout.as_millis().to_string(),
                ceiling.timeout.as_millis().to_string(),
            ));
        }
        if self.memory_bytes > ceiling.memory_bytes {
            return Some((
                "memory_mb",
                (self.memory_bytes >> 20).to_string(),
                (ceiling.memory_bytes >> 20).to_string(),
            ));
        }
        if self.output_bytes > ceiling.output_bytes {
            return Some((
                "output_kb",
                (self.output_bytes >> 10).to_string(),
                (ceiling.output_bytes >> 10).to_string(),
            ));
        }
        None
    }
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
    fn excess_names_the_first_limit_over_the_ceiling() {
        let ceiling = Limits::default();
        assert_eq!(Limits::default().first_excess(&ceiling), None);
        let asked = Limits {
            memory_bytes: 256 << 20,
            ..Limits::default()
        };
        assert_eq!(
            asked.first_excess(&ceiling),
            Some(("memory_mb", "256".into(), "128".into()))
        );
    }
}
