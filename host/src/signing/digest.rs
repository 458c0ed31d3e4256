//! SHA-256 digests as hex text, and the error for text that is not in a
//! documented format.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::text;

/// A SHA-256 digest, written as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(sha2::Sha256::digest(bytes).into())
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({self})")
    }
}

impl FromStr for Sha256Digest {
    type Err = FormatError;

    /// 64 hex digits (either case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        decode_hex(s, "a SHA-256 digest").map(Self)
    }
}

impl TryFrom<String> for Sha256Digest {
    type Error = FormatError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Sha256Digest> for String {
    fn from(digest: Sha256Digest) -> Self {
        digest.to_string()
    }
}

/// Text that is not in the documented format of a digest, key, signature
/// or lock file. The message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FormatError {
    message: String,
}

impl FormatError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// `N` bytes from exactly `2 * N` hex digits.
pub(crate) fn decode_hex<const N: usize>(s: &str, what: &str) -> Result<[u8; N], FormatError> {
    let wrong = || {
        FormatError::new(format!(
            "`{}` is not {what}: expected {} hex digits",
            text::untrusted(s, 160),
            2 * N
        ))
    };
    if s.len() != 2 * N {
        return Err(wrong());
    }
    let mut out = [0; N];
    hex::decode_to_slice(s, &mut out).map_err(|_| wrong())?;
    Ok(out)
}
