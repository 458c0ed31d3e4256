//! The digests and Ed25519 signatures that pin plugin bytes: SHA-256
//! digests, public keys (`ed25519:<hex>`), signing keys and signature
//! files. Plain data and checks; which plugin must carry what is
//! [`plugin::integrity`](crate::plugin::integrity)'s business.

mod digest;
mod signature;

pub use digest::{FormatError, Sha256Digest};
pub use signature::{PublicKey, Signature, SigningKey, signature_path, signed_message};
