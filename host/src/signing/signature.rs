//! Ed25519 keys and plugin signatures (`NAME.wasm.sig`), in the formats
//! the [module docs](super) describe.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ed25519_dalek::Signer as _;
use serde::{Deserialize, Serialize};

use super::digest::decode_hex;
use super::{FormatError, Sha256Digest};
use crate::text;

/// An Ed25519 public key whose signatures an operator may trust, written
/// `ed25519:<64 hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct PublicKey([u8; 32]);

const KEY_PREFIX: &str = "ed25519:";

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{KEY_PREFIX}{}", hex::encode(self.0))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl FromStr for PublicKey {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.trim().strip_prefix(KEY_PREFIX).ok_or_else(|| {
            FormatError::new(format!(
                "`{}` is not a public key: expected `{KEY_PREFIX}` and 64 hex digits (as `toolhost keygen` prints)",
                text::untrusted(s, 160)
            ))
        })?;
        let bytes = decode_hex(hex, "an Ed25519 public key")?;
        let key = Self(bytes);
        match key.verifying_key() {
            Some(_) => Ok(key),
            None => Err(FormatError::new(
                "not a valid Ed25519 public key (not a curve point)",
            )),
        }
    }
}

impl PublicKey {
    /// The key for verifying (`None` only for bytes no parse accepted).
    fn verifying_key(&self) -> Option<ed25519_dalek::VerifyingKey> {
        ed25519_dalek::VerifyingKey::from_bytes(&self.0).ok()
    }
}

impl TryFrom<String> for PublicKey {
    type Error = FormatError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<PublicKey> for String {
    fn from(key: PublicKey) -> Self {
        key.to_string()
    }
}

/// An Ed25519 secret key, for plugin authors (`toolhost keygen`,
/// `toolhost sign`). `Debug` shows only the public half; the secret is
/// wiped from memory when the key is dropped.
pub struct SigningKey(ed25519_dalek::SigningKey);

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public_key())
            .finish_non_exhaustive()
    }
}

/// A secret key file: TOML, both halves (the public one to catch a wrong
/// or damaged file before it signs anything).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    public_key: PublicKey,
    secret_key: String,
}

impl SigningKey {
    /// A new key from the operating system's random source.
    ///
    /// # Errors
    ///
    /// The operating system gave no random bytes.
    pub fn generate() -> std::io::Result<Self> {
        use rand::TryRngCore as _;
        let mut seed = [0u8; 32];
        rand::rngs::OsRng
            .try_fill_bytes(&mut seed)
            .map_err(std::io::Error::other)?;
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        seed.fill(0);
        Ok(Self(key))
    }

    /// The public key to give operators (their `integrity.trusted_keys`).
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }

    /// Sign the component `wasm` (its SHA-256).
    pub fn sign(&self, wasm: &[u8]) -> Signature {
        self.sign_digest(Sha256Digest::of(wasm))
    }

    /// Sign a component by its SHA-256 digest.
    pub fn sign_digest(&self, sha256: Sha256Digest) -> Signature {
        Signature {
            key: self.public_key(),
            sha256,
            signature: self.0.sign(&signed_message(&sha256)),
        }
    }

    /// The key as the text of a key file (keep it private: mode 0600).
    pub fn to_file_text(&self) -> String {
        format!(
            "# toolhost signing key (Ed25519). Keep this file secret; give out only the public key.\n\
             public_key = \"{}\"\n\
             secret_key = \"{}\"\n",
            self.public_key(),
            hex::encode(self.0.to_bytes())
        )
    }

    /// A key from the text of a key file ([`to_file_text`](Self::to_file_text)).
    ///
    /// # Errors
    ///
    /// The text is not a key file, or its two halves do not belong together.
    pub fn from_file_text(text: &str) -> Result<Self, FormatError> {
        let file: KeyFile = toml::from_str(text).map_err(|e| {
            FormatError::new(format!(
                "not a toolhost signing key file: {}",
                text::untrusted(e.message(), 256)
            ))
        })?;
        let seed = decode_hex::<32>(&file.secret_key, "an Ed25519 secret key")
            .map_err(|_| FormatError::new("`secret_key` is not 64 hex digits"))?;
        let key = Self(ed25519_dalek::SigningKey::from_bytes(&seed));
        if key.public_key() != file.public_key {
            return Err(FormatError::new(
                "`public_key` does not belong to `secret_key`: the file is damaged",
            ));
        }
        Ok(key)
    }
}

/// The bytes an Ed25519 plugin signature signs: the ASCII text
/// `toolhost-plugin-v1:sha256:<hex digest>`. A fixed prefix, so that a
/// signature made for something else cannot pass as a plugin signature.
pub fn signed_message(sha256: &Sha256Digest) -> Vec<u8> {
    format!("toolhost-plugin-v1:sha256:{sha256}").into_bytes()
}

/// A component's signature file (`NAME.wasm.sig`): who signed which digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    key: PublicKey,
    sha256: Sha256Digest,
    signature: ed25519_dalek::Signature,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignatureFile {
    key: PublicKey,
    sha256: Sha256Digest,
    signature: String,
}

impl Signature {
    /// The signer's public key.
    pub fn key(&self) -> PublicKey {
        self.key
    }

    /// The component digest it signs.
    pub fn sha256(&self) -> Sha256Digest {
        self.sha256
    }

    /// Whether it is a valid signature of [`sha256`](Self::sha256) by
    /// [`key`](Self::key) (strict verification: no malleable signatures,
    /// no weak keys). Whether the key is trusted is a separate question.
    pub fn verifies(&self) -> bool {
        self.key.verifying_key().is_some_and(|key| {
            key.verify_strict(&signed_message(&self.sha256), &self.signature)
                .is_ok()
        })
    }

    /// Parse the text of a signature file.
    ///
    /// # Errors
    ///
    /// The text is not in the documented format (see the module docs).
    pub fn parse(text: &str) -> Result<Self, FormatError> {
        let file: SignatureFile = toml::from_str(text).map_err(|e| {
            FormatError::new(format!(
                "not a toolhost signature file: {}",
                text::untrusted(e.message(), 256)
            ))
        })?;
        let bytes = decode_hex::<64>(&file.signature, "an Ed25519 signature")?;
        Ok(Self {
            key: file.key,
            sha256: file.sha256,
            signature: ed25519_dalek::Signature::from_bytes(&bytes),
        })
    }

    /// The text of its signature file.
    pub fn to_file_text(&self) -> String {
        format!(
            "# toolhost plugin signature: Ed25519 over \"toolhost-plugin-v1:sha256:<sha256>\"\n\
             key = \"{}\"\n\
             sha256 = \"{}\"\n\
             signature = \"{}\"\n",
            self.key,
            self.sha256,
            hex::encode(self.signature.to_bytes())
        )
    }
}

/// Where the signature of the component at `wasm` is: `NAME.wasm.sig`.
pub fn signature_path(wasm: &Path) -> PathBuf {
    let mut path = wasm.as_os_str().to_owned();
    path.push(".sig");
    PathBuf::from(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::generate().unwrap()
    }

    #[test]
    fn digests_and_keys_round_trip_through_text() {
        let digest = Sha256Digest::of(b"abc");
        assert_eq!(
            digest.to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(digest.to_string().to_uppercase().parse(), Ok(digest));
        assert!("ba78".parse::<Sha256Digest>().is_err());
        assert!("zz".repeat(32).parse::<Sha256Digest>().is_err());

        let public = key().public_key();
        assert_eq!(public.to_string().parse(), Ok(public));
        let bare = public.to_string().replace("ed25519:", "");
        let err = bare.parse::<PublicKey>().unwrap_err().to_string();
        assert!(err.contains("ed25519:"), "{err}");
    }

    #[test]
    fn a_signature_verifies_only_for_what_was_signed() {
        let key = key();
        let signature = key.sign(b"component");
        let text = signature.to_file_text();
        let parsed = Signature::parse(&text).unwrap();
        assert_eq!(parsed, signature);
        assert!(parsed.verifies());
        assert_eq!(parsed.sha256(), Sha256Digest::of(b"component"));

        // The digest line edited to another component's: no longer valid.
        let other = Sha256Digest::of(b"other component");
        let forged = text.replace(&signature.sha256().to_string(), &other.to_string());
        assert!(!Signature::parse(&forged).unwrap().verifies());
        // Another key's name on it: not valid either.
        let stranger = SigningKey::generate().unwrap().public_key();
        let forged = text.replace(&key.public_key().to_string(), &stranger.to_string());
        assert!(!Signature::parse(&forged).unwrap().verifies());
    }

    #[test]
    fn a_key_file_round_trips_and_a_mismatched_one_is_refused() {
        let key = key();
        let text = key.to_file_text();
        let back = SigningKey::from_file_text(&text).unwrap();
        assert_eq!(back.public_key(), key.public_key());
        assert!(!format!("{back:?}").contains(&hex::encode(key.0.to_bytes())));

        let other = SigningKey::generate().unwrap().public_key();
        let wrong = text.replace(&key.public_key().to_string(), &other.to_string());
        let err = SigningKey::from_file_text(&wrong).unwrap_err().to_string();
        assert!(err.contains("does not belong"), "{err}");
    }
}
