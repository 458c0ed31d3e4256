//! A real OCI registry on loopback: Debian's `docker-registry` (CNCF
//! distribution), installed by `.ci/install-guest-toolchains.sh oci`,
//! started on 127.0.0.1 with a config and storage of its own, anonymous or
//! behind htpasswd (basic) auth.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running registry; stopped when dropped.
#[derive(Debug)]
pub struct LoopbackRegistry {
    child: Child,
    dir: tempfile::TempDir,
    /// `127.0.0.1:PORT`.
    pub address: String,
}

/// The registry binary Debian's package installs.
const REGISTRY_BIN: &str = "docker-registry";

impl LoopbackRegistry {
    /// An anonymous registry: anyone may pull and push.
    pub fn anonymous() -> Self {
        Self::start(None)
    }

    /// A registry that asks for `user` / `password` (HTTP basic, from an
    /// htpasswd file with a bcrypt hash made by `htpasswd -B`).
    pub fn with_login(user: &str, password: &str) -> Self {
        Self::start(Some((user, password)))
    }

    fn start(login: Option<(&str, &str)>) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let address = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: {address}\n  secret: toolhost-tests\n",
            dir.path().join("data").display()
        );
        if let Some((user, password)) = login {
            let out = Command::new("htpasswd")
                .args(["-Bbn", user, password])
                .output()
                .expect("htpasswd runs (apt: apache2-utils; .ci/install-guest-toolchains.sh oci)");
            assert!(out.status.success(), "htpasswd failed");
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, &out.stdout).expect("write htpasswd");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: toolhost-tests\n    path: {}\n",
                file.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("write the registry config");
        // Its log (refused logins are expected) stays in its directory.
        let log = std::fs::File::create(dir.path().join("registry.log")).expect("a log file");
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `{REGISTRY_BIN}` ({e}): install it with .ci/install-guest-toolchains.sh oci \
                     (Debian package docker-registry)"
                )
            });
        let registry = Self {
            child,
            dir,
            address,
        };
        registry.wait_until_listening();
        registry
    }

    fn wait_until_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&self.address).is_err() {
            assert!(
                Instant::now() < deadline,
                "the registry did not listen on {} within 30 s",
                self.address
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `oci://127.0.0.1:PORT/PATH`.
    pub fn reference(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.address)
    }

    /// The file the registry keeps blob `digest` (`sha256:...`) in.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for LoopbackRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
