//! The TLS client settings of every outbound HTTPS connection the host
//! makes: plugins' `wasi:http` requests, REST tools, LLM providers and MCP
//! servers over streamable HTTP.
//!
//! rustls with the ring provider and the Mozilla root store (webpki-roots,
//! built in, so no system file decides what the host trusts), TLS 1.2 and
//! 1.3. reqwest gets it ready-made ([`http_client`]): it is built without a
//! crypto provider of its own, which keeps aws-lc (a long C build) out of
//! the tree.

use std::sync::{Arc, OnceLock};

use tokio_rustls::rustls;

/// The shared client settings. Made once; it is plain data.
pub(crate) fn client_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Arc::new(config)
    }))
}

/// A reqwest client builder that speaks TLS with [`client_config`].
pub(crate) fn http_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured((*client_config()).clone())
}
