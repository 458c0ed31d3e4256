//! `oci://REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]`.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use super::OciError;

/// Where a plugin lives in a registry: `oci://REGISTRY/REPOSITORY:TAG`,
/// `...@sha256:DIGEST`, or both (the digest wins: it is the pin).
///
/// ```
/// use toolhost::oci::OciReference;
///
/// let r: OciReference = "oci://127.0.0.1:5000/tools/calc:1.0".parse()?;
/// assert_eq!(r.registry(), "127.0.0.1:5000");
/// assert_eq!(r.tag(), Some("1.0"));
/// assert_eq!(r.default_name()?, "calc");
/// assert!(r.is_loopback());
/// # Ok::<(), toolhost::oci::OciError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciReference {
    inner: oci_client::Reference,
}

impl FromStr for OciReference {
    type Err = OciError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |message: String| OciError::BadReference {
            reference: crate::text::untrusted(text, 256),
            message,
        };
        let rest = text.strip_prefix("oci://").unwrap_or(text);
        if rest.contains("://") {
            return Err(bad(
                "only oci:// references are pulled; write oci://REGISTRY/REPOSITORY:TAG".into(),
            ));
        }
        let first = rest.split('/').next().unwrap_or("");
        if !rest.contains('/')
            || !(first.contains('.') || first.contains(':') || first == "localhost")
        {
            return Err(bad(
                "name the registry: oci://REGISTRY/REPOSITORY:TAG (e.g. oci://ghcr.io/acme/calc:1.0)"
                    .into(),
            ));
        }
        let inner: oci_client::Reference = rest
            .parse()
            .map_err(|e: oci_client::ParseError| bad(e.to_string()))?;
        if let Some(digest) = inner.digest()
            && !digest.starts_with("sha256:")
        {
            return Err(bad("only sha256 digests are supported".into()));
        }
        Ok(Self { inner })
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}", self.inner.whole())
    }
}

impl OciReference {
    /// The registry, `host[:port]`.
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The repository within the registry.
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, if it names one.
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    /// The digest (`sha256:...`), if it names one.
    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// The same repository at `digest`: the pinned form of a tag.
    pub fn at_digest(&self, digest: &str) -> Self {
        Self {
            inner: oci_client::Reference::with_digest(
                self.registry().to_owned(),
                self.repository().to_owned(),
                digest.to_owned(),
            ),
        }
    }

    /// Whether the registry is on this machine (`localhost`, a loopback
    /// address): the only registries spoken to over plain HTTP without
    /// being listed in `oci.plain_http`.
    pub fn is_loopback(&self) -> bool {
        let registry = self.registry();
        let host = match registry.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => registry.rsplit_once(':').map_or(registry, |(host, _)| host),
        };
        host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The plugin name it gives by default: the repository's last segment.
    ///
    /// # Errors
    ///
    /// That segment is not a plugin name (letters, digits, `-`, `_`).
    pub fn default_name(&self) -> Result<String, OciError> {
        let name = self.repository().rsplit('/').next().unwrap_or("");
        check_name(name)?;
        Ok(name.to_owned())
    }

    pub(super) fn inner(&self) -> &oci_client::Reference {
        &self.inner
    }
}

/// Check `name` is one a pulled plugin may be written under: it becomes a
/// file name, so nothing that could leave the directory or hide the file
/// (letters, digits, `-`, `_`; at most 64).
///
/// # Errors
///
/// [`OciError::BadName`].
pub fn check_name(name: &str) -> Result<(), OciError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(OciError::BadName {
            name: crate::text::untrusted(name, 128),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_and_only_loopback_is_local() {
        let r: OciReference = "oci://ghcr.io/acme/calc@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            .parse()
            .unwrap();
        assert!(r.digest().unwrap().starts_with("sha256:"));
        assert!(!r.is_loopback());
        // (oci-spec's parser takes no IPv6 literal as a registry.)
        for local in ["localhost:5000/x:1", "127.0.0.1:5000/x:1", "127.1.2.3/x:1"] {
            let r: OciReference = local.parse().unwrap();
            assert!(r.is_loopback(), "{local}");
        }
        for remote in [
            "registry.lan:5000/x:1",
            "10.0.0.1:5000/x:1",
            "127.example/x:1",
        ] {
            let r: OciReference = remote.parse().unwrap();
            assert!(!r.is_loopback(), "{remote}");
        }
        for bad in [
            "calc:1.0",
            "https://ghcr.io/acme/calc:1",
            "oci://ghcr.io/Acme/calc:1",
        ] {
            assert!(bad.parse::<OciReference>().is_err(), "{bad}");
        }
        assert!(check_name("../etc").is_err() && check_name("").is_err());
    }
}
