//! Plugin integrity: which component bytes a host agrees to compile and run.
//!
//! Three checks, each optional, all made against the very bytes that are
//! then compiled (read once, hashed, checked, compiled; no second read of
//! the file), and on every load, from the compile cache too:
//!
//! - **A pin in the manifest**: `sha256 = "<64 hex digits>"` at the top of
//!   `NAME.toml`. It catches a component swapped or damaged on its way to
//!   the plugin directory; it is no defence against someone who can write
//!   the directory (they can change the pin too).
//! - **The operator's lock file** ([`Lock`], `toolhost lock DIR`): the
//!   SHA-256 of every `NAME.wasm` *and* of its manifest (the manifest says
//!   what the plugin is granted, so it is part of what the operator
//!   reviewed). With a lock file in force, a plugin it does not list is
//!   refused too. It is policy, like the host config: read only from
//!   [`IntegrityPolicy::lock_file`], never found by looking around.
//! - **Signatures** ([`Signature`], `NAME.wasm.sig`): Ed25519 over the
//!   component's SHA-256, by keys the operator trusts
//!   ([`IntegrityPolicy::trusted_keys`]). A signature says who built the
//!   component; it does not cover the manifest, which operators edit.
//!
//! A plugin that fails a check is refused with
//! [`PluginError::Integrity`](super::PluginError::Integrity), naming both
//! digests; the other plugins in the directory still load.
//!
//! # File formats
//!
//! Digests and keys are lowercase hex. A public key is written
//! `ed25519:<64 hex digits>`. What is signed is the ASCII text
//! `toolhost-plugin-v1:sha256:<64 hex digits of the component's SHA-256>`
//! ([`signed_message`](crate::signing::signed_message)), so any Ed25519 tool can make or check a signature.
//! A signature file is TOML:
//!
//! ```toml
//! key = "ed25519:<64 hex digits>"
//! sha256 = "<64 hex digits>"
//! signature = "<128 hex digits>"
//! ```
//!
//! # Examples
//!
//! ```
//! use toolhost::signing::{Signature, SigningKey};
//!
//! let key = SigningKey::generate()?;
//! let signature = key.sign(b"\0asm component bytes");
//! let parsed = Signature::parse(&signature.to_file_text())?;
//! assert_eq!(parsed.key(), key.public_key());
//! assert!(parsed.verifies());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod lock;

use std::path::{Path, PathBuf};

use crate::config::IntegrityPolicy;
pub(crate) use crate::signing::{FormatError, Sha256Digest};
use crate::signing::{PublicKey, Signature, signature_path};
pub use lock::{Lock, LockEntry};

use crate::fsread::{self, read_regular};
use crate::text;

/// Why the integrity policy refused a plugin. Each message names what was
/// expected and what was found, and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IntegrityError {
    /// The component's digest is not the one its manifest pins.
    #[error(
        "its SHA-256 is {actual}, but its manifest pins sha256 = \"{pinned}\": this is not the build that was pinned; \
         put the pinned build back, or, if this one is meant to replace it, set `sha256` in the manifest to its digest"
    )]
    ManifestPin {
        /// The digest in the manifest.
        pinned: Sha256Digest,
        /// The component's digest.
        actual: Sha256Digest,
    },
    /// A lock file is in force and does not list this plugin.
    #[error(
        "plugin `{name}` is not in the lock file {}: review it, then re-run `toolhost lock` to add it",
        lock.display()
    )]
    NotLocked {
        /// The plugin's name (escaped).
        name: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// The component's digest is not the one the lock file pins.
    #[error(
        "its SHA-256 is {actual}, but the lock file {} pins {locked} for plugin `{name}`: the component changed since it was locked; \
         put the locked build back, or review this one and re-run `toolhost lock`",
        lock.display()
    )]
    LockedComponent {
        /// The plugin's name (escaped).
        name: String,
        /// The lock file.
        lock: PathBuf,
        /// The digest in the lock file.
        locked: Sha256Digest,
        /// The component's digest.
        actual: Sha256Digest,
    },
    /// The manifest is not the one the lock file pins (changed, removed
    /// or added).
    #[error("{}", locked_manifest_message(manifest, lock, locked, actual))]
    LockedManifest {
        /// The manifest file.
        manifest: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The digest in the lock file; `None`: locked without a manifest.
        locked: Option<Sha256Digest>,
        /// The manifest's digest; `None`: there is no manifest.
        actual: Option<Sha256Digest>,
    },
    /// Signatures are required and the component has none.
    #[error(
        "it is not signed (no {}) and this host requires signatures (integrity.require_signatures): \
         get the signature file from its author, or sign it with a key in integrity.trusted_keys (`toolhost sign`)",
        signature.display()
    )]
    Unsigned {
        /// Where its signature file would be.
        signature: PathBuf,
    },
    /// The signature file cannot be read or is not one.
    #[error(
        "{}: {message}; re-create it with `toolhost sign`, or remove it",
        signature.display()
    )]
    SignatureFile {
        /// The signature file.
        signature: PathBuf,
        /// What is wrong (escaped).
        message: String,
    },
    /// Signatures are required and the signer's key is not trusted.
    #[error(
        "it is signed by {key}, a key this host does not trust: add the key to integrity.trusted_keys if you trust its owner, \
         or get a build signed by a trusted key"
    )]
    UntrustedKey {
        /// The signer's key.
        key: PublicKey,
    },
    /// A trusted key signed a different component.
    #[error(
        "its SHA-256 is {actual}, but its signature ({}) is for SHA-256 {signed}: the component changed after it was signed; \
         put the signed build back, or have this one signed",
        signature.display()
    )]
    SignedOtherDigest {
        /// The signature file.
        signature: PathBuf,
        /// The digest the signature is for.
        signed: Sha256Digest,
        /// The component's digest.
        actual: Sha256Digest,
    },
    /// The signature does not verify.
    #[error(
        "its signature ({}) by {key} does not verify for SHA-256 {actual}: the signature file is damaged or forged; \
         get a fresh one from the author",
        signature.display()
    )]
    BadSignature {
        /// The signature file.
        signature: PathBuf,
        /// The key it names.
        key: PublicKey,
        /// The component's digest.
        actual: Sha256Digest,
    },
}

fn locked_manifest_message(
    manifest: &Path,
    lock: &Path,
    locked: &Option<Sha256Digest>,
    actual: &Option<Sha256Digest>,
) -> String {
    let (manifest, lock) = (manifest.display(), lock.display());
    match (locked, actual) {
        (Some(locked), Some(actual)) => format!(
            "its manifest {manifest} has SHA-256 {actual}, but the lock file {lock} pins {locked}: \
             the manifest (grants, limits, config) changed since it was locked; \
             put the locked manifest back, or review this one and re-run `toolhost lock`"
        ),
        (Some(locked), None) => format!(
            "the lock file {lock} pins a manifest {manifest} with SHA-256 {locked}, but there is none: \
             put it back, or re-run `toolhost lock`"
        ),
        (None, Some(actual)) => format!(
            "it has a manifest {manifest} (SHA-256 {actual}), but the lock file {lock} locked it without one: \
             remove the manifest, or review it and re-run `toolhost lock`"
        ),
        (None, None) => format!("the manifest {manifest} does not match the lock file {lock}"),
    }
}

/// What the integrity checks know of a plugin's manifest.
#[derive(Debug, Clone, Copy)]
pub(super) enum ManifestState {
    /// Not known (it did not parse): only the component is checked. The
    /// plugin does not load anyway.
    Unknown,
    /// There is no manifest.
    Absent,
    /// The manifest as read (once) for this load.
    Read {
        /// Its `sha256` pin.
        pin: Option<Sha256Digest>,
        /// The SHA-256 of its bytes.
        digest: Sha256Digest,
    },
}

impl ManifestState {
    /// The state of the manifest in `settings`; `None`: it did not parse.
    pub(super) fn of(settings: Option<&super::Settings>) -> Self {
        let Some(settings) = settings else {
            return Self::Unknown;
        };
        match settings.manifest_sha256 {
            Some(digest) => Self::Read {
                pin: settings.manifest.sha256,
                digest,
            },
            None => Self::Absent,
        }
    }
}

/// The integrity policy in force, its lock file read.
#[derive(Debug, Default)]
pub(super) struct Integrity {
    lock: Option<(PathBuf, Lock)>,
    require_signatures: bool,
    trusted_keys: Vec<PublicKey>,
}

impl Integrity {
    /// Read the lock file `policy` names.
    ///
    /// # Errors
    ///
    /// The lock file cannot be read or is not one, or signatures are
    /// required with no key to trust.
    pub(super) fn new(policy: &IntegrityPolicy) -> Result<Self, String> {
        if policy.require_signatures && policy.trusted_keys.is_empty() {
            return Err(
                "`integrity.require_signatures` is on but `integrity.trusted_keys` is empty: \
                 no plugin could load; add the public keys of the authors you trust"
                    .into(),
            );
        }
        let lock = match &policy.lock_file {
            None => None,
            Some(path) => {
                let text = fsread::read_text(path, fsread::LOCK_FILE_MAX_BYTES, None).map_err(|e| {
                    format!(
                        "cannot read lock file {}: {e}; write it with `toolhost lock DIR -o {}`, or fix `integrity.lock_file` (--lock)",
                        path.display(),
                        path.display()
                    )
                })?;
                let lock = Lock::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                Some((path.clone(), lock))
            }
        };
        Ok(Self {
            lock,
            require_signatures: policy.require_signatures,
            trusted_keys: policy.trusted_keys.clone(),
        })
    }

    fn signatures_on(&self) -> bool {
        self.require_signatures || !self.trusted_keys.is_empty()
    }

    /// Whether [`check`](Self::check) looks at the component's bytes for a
    /// plugin with `manifest` (when not, a load may skip reading them).
    pub(super) fn needs_bytes(&self, manifest: ManifestState) -> bool {
        let pinned = matches!(manifest, ManifestState::Read { pin: Some(_), .. });
        self.lock.is_some() || pinned || self.signatures_on()
    }

    /// Check the component read from `wasm_path` (its bytes `wasm`, the
    /// ones about to be compiled) and its manifest against the policy.
    /// A signature file is read within `sidecar_max` bytes, the manifest
    /// budget.
    pub(super) fn check(
        &self,
        wasm_path: &Path,
        wasm: &[u8],
        manifest: ManifestState,
        sidecar_max: u64,
    ) -> Result<(), IntegrityError> {
        let pin = match manifest {
            ManifestState::Read { pin, .. } => pin,
            _ => None,
        };
        if !self.needs_bytes(manifest) {
            return Ok(());
        }
        let actual = Sha256Digest::of(wasm);
        if let Some((lock_path, lock)) = &self.lock {
            check_lock(lock_path, lock, wasm_path, actual, manifest)?;
        }
        if let Some(pinned) = pin
            && pinned != actual
        {
            return Err(IntegrityError::ManifestPin { pinned, actual });
        }
        if self.signatures_on() {
            self.check_signature(wasm_path, actual, sidecar_max)?;
        }
        Ok(())
    }

    fn check_signature(
        &self,
        wasm_path: &Path,
        actual: Sha256Digest,
        sidecar_max: u64,
    ) -> Result<(), IntegrityError> {
        let path = signature_path(wasm_path);
        let invalid = |message: String| IntegrityError::SignatureFile {
            signature: path.clone(),
            message,
        };
        let bytes = match read_regular(&path, sidecar_max, "plugins.max_manifest_bytes") {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if self.require_signatures {
                    return Err(IntegrityError::Unsigned { signature: path });
                }
                return Ok(());
            }
            Err(e) => return Err(invalid(format!("cannot read it: {e}"))),
        };
        let text = String::from_utf8(bytes).map_err(|_| invalid("not UTF-8 text".into()))?;
        let signature = Signature::parse(&text).map_err(|e| invalid(e.to_string()))?;
        if !self.trusted_keys.contains(&signature.key()) {
            if self.require_signatures {
                return Err(IntegrityError::UntrustedKey {
                    key: signature.key(),
                });
            }
            // A signature by a stranger says nothing either way.
            tracing::debug!(
                signature = %path.display(),
                key = %signature.key(),
                "signed by a key this host does not trust; loading it as unsigned"
            );
            return Ok(());
        }
        if signature.sha256() != actual {
            return Err(IntegrityError::SignedOtherDigest {
                signature: path,
                signed: signature.sha256(),
                actual,
            });
        }
        if !signature.verifies() {
            return Err(IntegrityError::BadSignature {
                signature: path,
                key: signature.key(),
                actual,
            });
        }
        Ok(())
    }
}

fn check_lock(
    lock_path: &Path,
    lock: &Lock,
    wasm_path: &Path,
    actual: Sha256Digest,
    manifest: ManifestState,
) -> Result<(), IntegrityError> {
    let name = super::plugin_name(wasm_path);
    let shown = text::untrusted(&name, 128);
    let Some(entry) = lock.get(&name) else {
        return Err(IntegrityError::NotLocked {
            name: shown,
            lock: lock_path.to_owned(),
        });
    };
    if entry.wasm != actual {
        return Err(IntegrityError::LockedComponent {
            name: shown,
            lock: lock_path.to_owned(),
            locked: entry.wasm,
            actual,
        });
    }
    let found = match manifest {
        ManifestState::Unknown => return Ok(()),
        ManifestState::Absent => None,
        ManifestState::Read { digest, .. } => Some(digest),
    };
    if entry.manifest != found {
        return Err(IntegrityError::LockedManifest {
            manifest: wasm_path.with_extension("toml"),
            lock: lock_path.to_owned(),
            locked: entry.manifest,
            actual: found,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::SigningKey;

    fn key() -> SigningKey {
        SigningKey::generate().unwrap()
    }

    #[test]
    fn the_checks_name_both_digests() {
        let dir = tempfile::tempdir().unwrap();
        let wasm_path = dir.path().join("calc.wasm");
        let (good, bad) = (b"good".as_slice(), b"bad".as_slice());
        let (good_digest, bad_digest) = (Sha256Digest::of(good), Sha256Digest::of(bad));

        // A manifest pin.
        let manifest = ManifestState::Read {
            pin: Some(good_digest),
            digest: Sha256Digest::of(b"manifest"),
        };
        let none = Integrity::default();
        none.check(&wasm_path, good, manifest, 4096).unwrap();
        let err = none
            .check(&wasm_path, bad, manifest, 4096)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&good_digest.to_string()) && err.contains(&bad_digest.to_string()),
            "{err}"
        );

        // A lock.
        let mut lock = Lock::default();
        lock.insert(
            "calc",
            LockEntry {
                wasm: good_digest,
                manifest: None,
            },
        );
        let locked = Integrity {
            lock: Some((dir.path().join("toolhost.lock"), lock)),
            ..Integrity::default()
        };
        locked
            .check(&wasm_path, good, ManifestState::Absent, 4096)
            .unwrap();
        let err = locked
            .check(&wasm_path, bad, ManifestState::Absent, 4096)
            .unwrap_err();
        assert!(
            matches!(err, IntegrityError::LockedComponent { .. }),
            "{err}"
        );
        let err = locked.check(&wasm_path, good, manifest, 4096).unwrap_err();
        assert!(
            matches!(err, IntegrityError::LockedManifest { .. }),
            "{err}"
        );
        let err = locked
            .check(
                &dir.path().join("other.wasm"),
                good,
                ManifestState::Absent,
                4096,
            )
            .unwrap_err();
        assert!(matches!(err, IntegrityError::NotLocked { .. }), "{err}");

        // Signatures.
        let key = key();
        let signed = Integrity {
            require_signatures: true,
            trusted_keys: vec![key.public_key()],
            ..Integrity::default()
        };
        let err = signed
            .check(&wasm_path, good, ManifestState::Absent, 4096)
            .unwrap_err();
        assert!(matches!(err, IntegrityError::Unsigned { .. }), "{err}");
        std::fs::write(signature_path(&wasm_path), key.sign(good).to_file_text()).unwrap();
        signed
            .check(&wasm_path, good, ManifestState::Absent, 4096)
            .unwrap();
        let err = signed
            .check(&wasm_path, bad, ManifestState::Absent, 4096)
            .unwrap_err();
        assert!(
            matches!(err, IntegrityError::SignedOtherDigest { .. }),
            "{err}"
        );
        let stranger = SigningKey::generate().unwrap();
        std::fs::write(
            signature_path(&wasm_path),
            stranger.sign(good).to_file_text(),
        )
        .unwrap();
        let err = signed
            .check(&wasm_path, good, ManifestState::Absent, 4096)
            .unwrap_err();
        assert!(matches!(err, IntegrityError::UntrustedKey { .. }), "{err}");
        // Not required: a stranger's signature is no signature.
        let optional = Integrity {
            require_signatures: false,
            ..signed
        };
        optional
            .check(&wasm_path, good, ManifestState::Absent, 4096)
            .unwrap();
    }
}
