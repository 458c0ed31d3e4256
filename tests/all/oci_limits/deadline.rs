//! `[[oci.plugins]]` fetched on a deadline (`oci.fetch_timeout_secs`): a
//! registry that drips its answer, each byte in time for the per-read
//! timeout, costs its own plugin and not the start.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost::config::HostConfig;
use toolhost::toolbox::Toolbox;
use toolhost::tools::CallContext;
use toolhost_tests::plugins::{plugin_subset, toolhost_bin};

/// A loopback server that answers every request with `head`, then `drip`
/// a byte at a time, one every 100 ms, until the client goes.
async fn dripping(head: &'static str, drip: u8) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                // The request's head first: an answer before the request
                // is no answer to a client.
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tcp.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                if tcp.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    tick.tick().await;
                    if tcp.write_all(&[drip]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    address
}

/// A header that never ends.
const HEAD_DRIP: &str = "HTTP/1.1 200 OK\r\nX-Drip: ";
/// A manifest body that never ends.
const BODY_DRIP: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/vnd.oci.image.manifest.v1+json\r\n\
                         content-length: 100000\r\n\r\n{\"a\":\"";

/// A host config (in `dir`) declaring a plugin on each dripping server,
/// by tag and by digest, with a 1 s deadline.
async fn dripping_config(dir: &std::path::Path) -> std::path::PathBuf {
    let by_head = dripping(HEAD_DRIP, b'a').await;
    let by_body = dripping(BODY_DRIP, b'a').await;
    let path = dir.join("toolhost.toml");
    std::fs::write(
        &path,
        format!(
            "cache_dir = \"{}\"\n[oci]\nfetch_timeout_secs = 1\n\
             [[oci.plugins]]\nref = \"oci://{by_head}/tools/drip:1.0\"\nname = \"drip_head\"\n\
             [[oci.plugins]]\nref = \"oci://{by_body}/tools/drip@sha256:{}\"\nname = \"drip_body\"\n",
            dir.join("cache").display(),
            "0".repeat(64)
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dripping_registry_costs_its_plugin_after_the_deadline_and_the_rest_load() {
    let dir = tempfile::tempdir().unwrap();
    let config = HostConfig::from_file(&dripping_config(dir.path()).await).unwrap();
    assert_eq!(config.oci.fetch_timeout_secs, 1);
    let plugins = plugin_subset(&["calc"]);
    let started = Instant::now();
    let toolbox = tokio::time::timeout(
        Duration::from_secs(60),
        Toolbox::builder(config).plugins(plugins.path()).build(),
    )
    .await
    .expect("the start is not held by a dripping registry")
    .unwrap();
    let took = started.elapsed();
    let errors: Vec<String> = toolbox
        .oci_errors()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for (error, what) in errors.iter().zip(["tools/drip:1.0", "tools/drip@sha256:"]) {
        assert!(
            error.contains(what) && error.contains("oci.fetch_timeout_secs"),
            "{error}"
        );
    }
    // Both on one deadline each, side by side: well short of the
    // 60 s read timeout that never trips on a drip.
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    let out = toolbox
        .registry()
        .call(
            "calc_eval",
            json!({"expression": "6*7"}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
    assert_eq!(out["value"], json!(42.0));
}

#[tokio::test(flavor = "multi_thread")]
async fn toolhost_list_reports_a_dripping_plugin_as_skipped_and_lists_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let config = dripping_config(dir.path()).await;
    let plugins = plugin_subset(&["calc"]);
    let plugins_path = plugins.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(toolhost_bin())
            .args(["list", "--config"])
            .arg(&config)
            .arg("--plugins")
            .arg(&plugins_path)
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("TOOLHOST_PLUGINS")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("calc_eval"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("tools/drip:1.0") && stderr.contains("oci.fetch_timeout_secs"),
        "{stderr}"
    );
    assert!(stderr.contains("tools/drip@sha256:"), "{stderr}");
}

#[test]
fn a_fetch_deadline_of_zero_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolhost.toml");
    std::fs::write(&path, "[oci]\nfetch_timeout_secs = 0\n").unwrap();
    let err = HostConfig::from_file(&path).unwrap_err().to_string();
    assert!(err.contains("oci.fetch_timeout_secs"), "{err}");
    std::fs::write(&path, "[oci]\ncredential_origins = [\"auth.docker.io\"]\n").unwrap();
    let err = HostConfig::from_file(&path).unwrap_err().to_string();
    assert!(err.contains("credential_origins"), "{err}");
}
