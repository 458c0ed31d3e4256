//! Plugins through a real OCI registry on loopback (Debian's
//! `docker-registry`, CNCF distribution): `toolhost push` and `pull` by tag
//! and by digest, a tampered blob refused, `require_signatures` applied to
//! pulled plugins as to local ones, `[[oci.plugins]]` fetched into the cache
//! and loaded offline, htpasswd auth, and `oras` both ways.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;
use toolhost::config::HostConfig;
use toolhost::plugin::PluginError;
use toolhost::plugin::integrity::IntegrityError;
use toolhost::signing::SigningKey;
use toolhost::toolbox::Toolbox;
use toolhost::tools::CallContext;
use toolhost_tests::plugins::{plugin_subset, toolhost_bin, workspace_root};
use toolhost_tests::registry::LoopbackRegistry;

/// `toolhost ARGS` with a private home, no host config, and `env` on top.
fn toolhost(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(toolhost_bin());
    command
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("TOOLHOST_CACHE_DIR", home.join(".cache"))
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("DOCKER_CONFIG")
        .env_remove("TOOLHOST_OCI_USERNAME")
        .env_remove("TOOLHOST_OCI_PASSWORD")
        .env_remove("TOOLHOST_OCI_TOKEN");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("toolhost starts")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Run it, expect success, return stdout's one line (the pinned reference).
fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn read(path: impl AsRef<Path>) -> Vec<u8> {
    std::fs::read(path.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", path.as_ref().display()))
}

/// Load `config` (its `[[oci.plugins]]`) and call calc with 6*7.
async fn calc_through(config: HostConfig) -> Result<f64, String> {
    let toolbox = Toolbox::builder(config)
        .build()
        .await
        .map_err(|e| e.to_string())?;
    if let Some(e) = toolbox.oci_errors().first() {
        return Err(format!("oci: {e}"));
    }
    if let Some(e) = toolbox.plugin_report().errors.first() {
        return Err(format!(
            "plugin: {e}: {:?}",
            std::error::Error::source(e).map(ToString::to_string)
        ));
    }
    let out = toolbox
        .registry()
        .call(
            "calc_eval",
            json!({"expression": "6*7"}),
            &CallContext::default(),
        )
        .await
        .output
        .map_err(|e| e.to_string())?;
    out["value"].as_f64().ok_or_else(|| out.to_string())
}

#[test]
fn oci_push_then_pull_by_tag_and_by_digest_gives_back_the_same_plugin() {
    let registry = LoopbackRegistry::anonymous();
    let home = tempfile::tempdir().unwrap();
    let src = plugin_subset(&["calc"]);
    let key = SigningKey::generate().unwrap();
    let wasm = read(src.path().join("calc.wasm"));
    std::fs::write(
        src.path().join("calc.wasm.sig"),
        key.sign(&wasm).to_file_text(),
    )
    .unwrap();
    let reference = registry.reference("tools/calc:1.0");

    let pinned = ok(toolhost(
        home.path(),
        &[
            "push",
            &src.path().join("calc.wasm").display().to_string(),
            &reference,
        ],
        &[],
    ));
    assert!(
        pinned.starts_with(&registry.reference("tools/calc@sha256:")),
        "{pinned}"
    );

    for (what, from) in [("tag", &reference), ("digest", &pinned)] {
        let out_dir = home.path().join(format!("by-{what}"));
        let out = toolhost(
            home.path(),
            &["pull", from, "--plugins", &out_dir.display().to_string()],
            &[],
        );
        assert_eq!(ok(out), pinned, "pulled by {what}");
        for file in ["calc.wasm", "calc.toml", "calc.wasm.sig"] {
            assert_eq!(
                read(out_dir.join(file)),
                read(src.path().join(file)),
                "{file} by {what}"
            );
        }
        // Nothing half-written is left behind.
        let names: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    // A name that would leave the directory is refused; so is a digest that
    // is not there.
    let out = toolhost(home.path(), &["pull", &reference, "--name", "../x"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let missing = registry.reference(&format!("tools/calc@sha256:{}", "0".repeat(64)));
    let out = toolhost(home.path(), &["pull", &missing], &[]);
    assert!(
        text(&out).contains("not found in the registry (404)"),
        "{}",
        text(&out)
    );
    let out = toolhost(
        home.path(),
        &["pull", &registry.reference("tools/none:1")],
        &[],
    );
    assert!(text(&out).contains("(404)"), "{}", text(&out));
}

#[test]
fn oci_a_tampered_blob_is_refused_and_nothing_is_written() {
    let registry = LoopbackRegistry::anonymous();
    let home = tempfile::tempdir().unwrap();
    let src = plugin_subset(&["calc"]);
    let reference = registry.reference("tools/calc:1.0");
    ok(toolhost(
        home.path(),
        &[
            "push",
            &src.path().join("calc.wasm").display().to_string(),
            &reference,
        ],
        &[],
    ));
    let wasm = read(src.path().join("calc.wasm"));
    let digest = format!("sha256:{}", toolhost::signing::Sha256Digest::of(&wasm));
    // Same length, one byte changed: only the digest can tell.
    let mut tampered = wasm.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0x01;
    std::fs::write(registry.blob_file(&digest), &tampered).unwrap();

    let out_dir = home.path().join("plugins");
    std::fs::create_dir(&out_dir).unwrap();
    let out = toolhost(
        home.path(),
        &[
            "pull",
            &reference,
            "--plugins",
            &out_dir.display().to_string(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("tampered"), "{}", text(&out));
    assert_eq!(
        std::fs::read_dir(&out_dir).unwrap().count(),
        0,
        "nothing is written"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn oci_require_signatures_holds_for_pulled_plugins_and_the_cache_serves_offline() {
    let registry = LoopbackRegistry::anonymous();
    let home = tempfile::tempdir().unwrap();
    let src = plugin_subset(&["calc"]);
    let key = SigningKey::generate().unwrap();
    let wasm_path = src.path().join("calc.wasm").display().to_string();
    let unsigned = registry.reference("tools/calc:unsigned");
    ok(toolhost(home.path(), &["push", &wasm_path, &unsigned], &[]));
    std::fs::write(
        src.path().join("calc.wasm.sig"),
        key.sign(&read(src.path().join("calc.wasm"))).to_file_text(),
    )
    .unwrap();
    let signed = registry.reference("tools/calc:signed");
    ok(toolhost(home.path(), &["push", &wasm_path, &signed], &[]));

    let cache = home.path().join("cache");
    let config = |reference: &str| {
        let path = home.path().join("toolhost.toml");
        std::fs::write(
            &path,
            format!(
                "cache_dir = \"{}\"\n[integrity]\nrequire_signatures = true\ntrusted_keys = [\"{}\"]\n\
                 [[oci.plugins]]\nref = \"{reference}\"\n",
                cache.display(),
                key.public_key()
            ),
        )
        .unwrap();
        HostConfig::from_file(&path).unwrap()
    };

    // Unsigned: fetched, then refused by the integrity check, by name.
    let toolbox = Toolbox::builder(config(&unsigned)).build().await.unwrap();
    assert!(
        toolbox.oci_errors().is_empty(),
        "{:?}",
        toolbox.oci_errors()
    );
    let [PluginError::Integrity { error, .. }] = toolbox.plugin_report().errors.as_slice() else {
        panic!("not refused: {:?}", toolbox.plugin_report().errors);
    };
    assert!(
        matches!(**error, IntegrityError::Unsigned { .. }),
        "{error}"
    );
    drop(toolbox);

    // Signed: loaded and called.
    assert_eq!(calc_through(config(&signed)).await, Ok(42.0));

    // `toolhost lock` pins the declared plugin at the digest it resolved to.
    std::fs::create_dir(home.path().join("empty")).unwrap();
    let lock = ok(toolhost(
        home.path(),
        &[
            "lock",
            &home.path().join("empty").display().to_string(),
            "--config",
            "toolhost.toml",
        ],
        &[],
    ));
    let digest = toolhost::signing::Sha256Digest::of(&read(src.path().join("calc.wasm")));
    assert!(
        lock.contains("[plugins.calc]") && lock.contains(&digest.to_string()),
        "{lock}"
    );

    // Offline: the tag's last digest and the cached files serve it.
    drop(registry);
    assert_eq!(calc_through(config(&signed)).await, Ok(42.0));
}

#[test]
fn oci_behind_htpasswd_auth_takes_credentials_from_the_environment_or_docker_config() {
    let registry = LoopbackRegistry::with_login("ann", "s3cret-pw");
    let home = tempfile::tempdir().unwrap();
    let src = plugin_subset(&["calc"]);
    let wasm_path = src.path().join("calc.wasm").display().to_string();
    let reference = registry.reference("tools/calc:1.0");

    let out = toolhost(home.path(), &["push", &wasm_path, &reference], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("(401)") && text(&out).contains("TOOLHOST_OCI_USERNAME"),
        "{}",
        text(&out)
    );

    let wrong = [
        ("TOOLHOST_OCI_USERNAME", "ann"),
        ("TOOLHOST_OCI_PASSWORD", "wrong-pw"),
    ];
    let out = toolhost(home.path(), &["push", &wasm_path, &reference], &wrong);
    assert!(text(&out).contains("(401)"), "{}", text(&out));
    assert!(!text(&out).contains("wrong-pw"), "{}", text(&out));

    let right = [
        ("TOOLHOST_OCI_USERNAME", "ann"),
        ("TOOLHOST_OCI_PASSWORD", "s3cret-pw"),
    ];
    let pinned = ok(toolhost(
        home.path(),
        &["push", &wasm_path, &reference],
        &right,
    ));
    assert!(pinned.contains("@sha256:"), "{pinned}");

    // The Docker config the user already has (`docker login`'s format).
    let out = toolhost(home.path(), &["pull", &pinned, "--plugins", "a"], &[]);
    assert!(text(&out).contains("(401)"), "{}", text(&out));
    std::fs::create_dir(home.path().join(".docker")).unwrap();
    std::fs::write(
        home.path().join(".docker/config.json"),
        json!({"auths": {registry.address.clone(): {"auth": "YW5uOnMzY3JldC1wdw=="}}}).to_string(),
    )
    .unwrap();
    let out = toolhost(home.path(), &["pull", &pinned, "--plugins", "a", "-v"], &[]);
    assert_eq!(ok(out), pinned);
    assert_eq!(
        read(home.path().join("a/calc.wasm")),
        read(src.path().join("calc.wasm"))
    );
}

/// `python3` of the checkout's tool environment, with oras-py in it.
fn oras_python(script: &str, args: &[&str]) -> Output {
    let python = std::env::var_os("TOOLHOST_TOOLCHAINS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/toolchains"))
        .join("venv/bin/python3");
    Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("the venv's python3 runs (.ci/install-guest-toolchains.sh oci)")
}

#[test]
fn oci_oras_pulls_what_toolhost_pushes_and_toolhost_pulls_what_oras_pushes() {
    let registry = LoopbackRegistry::anonymous();
    let home = tempfile::tempdir().unwrap();
    let src = plugin_subset(&["calc"]);
    let reference = registry.reference("tools/calc:1.0");
    ok(toolhost(
        home.path(),
        &[
            "push",
            &src.path().join("calc.wasm").display().to_string(),
            &reference,
        ],
        &[],
    ));

    // oras pulls every titled layer: a ready plugin directory.
    let target = reference.trim_start_matches("oci://");
    let out_dir = home.path().join("oras-out");
    let out = oras_python(
        "import sys, oras.client\n\
         c = oras.client.OrasClient(insecure=True)\n\
         print(c.pull(target=sys.argv[1], outdir=sys.argv[2]))",
        &[target, &out_dir.display().to_string()],
    );
    assert!(out.status.success(), "{}", text(&out));
    for file in ["calc.wasm", "calc.toml"] {
        assert_eq!(
            read(out_dir.join(file)),
            read(src.path().join(file)),
            "{file}"
        );
    }

    // oras pushes a component with the Wasm config; toolhost pulls it.
    let config = home.path().join("config.json");
    std::fs::write(&config, r#"{"architecture":"wasm","os":"wasip2"}"#).unwrap();
    let from_oras = format!("{}/tools/oras-calc:2.0", registry.address);
    let push = "import os, sys, oras.client\n\
                os.chdir(os.path.dirname(sys.argv[2]))\n\
                c = oras.client.OrasClient(insecure=True)\n\
                c.push(target=sys.argv[1], files=[os.path.basename(sys.argv[2]) + ':application/wasm'], \
                       manifest_config=sys.argv[3] + ':' + sys.argv[4])";
    let out = oras_python(
        push,
        &[
            &from_oras,
            &src.path().join("calc.wasm").display().to_string(),
            &config.display().to_string(),
            "application/vnd.wasm.config.v0+json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let pulled = home.path().join("pulled");
    ok(toolhost(
        home.path(),
        &[
            "pull",
            &format!("oci://{from_oras}"),
            "--name",
            "calc",
            "--plugins",
            &pulled.display().to_string(),
        ],
        &[],
    ));
    assert_eq!(
        read(pulled.join("calc.wasm")),
        read(src.path().join("calc.wasm"))
    );

    // A container image's config is not a plugin: refused by media type.
    let image = format!("{}/tools/image:1", registry.address);
    let out = oras_python(
        push,
        &[
            &image,
            &src.path().join("calc.toml").display().to_string(),
            &config.display().to_string(),
            "application/vnd.oci.image.config.v1+json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = toolhost(home.path(), &["pull", &format!("oci://{image}")], &[]);
    assert!(
        text(&out).contains("not a WebAssembly component artifact")
            && text(&out).contains("application/vnd.oci.image.config.v1+json"),
        "{}",
        text(&out)
    );
}

/// A loopback server that answers every request with `reply(path)`.
async fn serve(
    reply: impl Fn(String) -> axum::response::Response + Clone + Send + Sync + 'static,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let reply = reply.clone();
        async move {
            let path = request
                .uri()
                .path_and_query()
                .map(ToString::to_string)
                .unwrap_or_default();
            reply(path)
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

#[tokio::test(flavor = "multi_thread")]
async fn oci_redirects_are_followed_and_403_and_429_are_named() {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    use toolhost::config::OciConfig;
    use toolhost::oci::{OciError, OciReference, Registry};
    use toolhost::tools::PluginBudget;

    let registry = LoopbackRegistry::anonymous();
    let src = plugin_subset(&["calc"]);
    let client = Registry::new(&OciConfig::default()).unwrap();
    let budget = PluginBudget::default();
    let reference: OciReference = registry.reference("tools/calc:1.0").parse().unwrap();
    client
        .push(&src.path().join("calc.wasm"), &reference, &budget)
        .await
        .unwrap();

    // Every request redirected elsewhere (as registries send blobs to
    // their storage): followed, digests still checked.
    let target = registry.address.clone();
    let redirector = serve(move |path| {
        (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, format!("http://{target}{path}"))],
        )
            .into_response()
    })
    .await;
    let via: OciReference = format!("oci://{redirector}/tools/calc:1.0")
        .parse()
        .unwrap();
    let artifact = client.pull(&via, &budget).await.unwrap();
    let wasm = read(src.path().join("calc.wasm"));
    assert_eq!(
        artifact.component_digest(),
        toolhost::signing::Sha256Digest::of(&wasm)
    );

    for (status, code, expect) in [
        (StatusCode::FORBIDDEN, "DENIED", "(403)"),
        (StatusCode::TOO_MANY_REQUESTS, "TOOMANYREQUESTS", "(429)"),
    ] {
        let refuser = serve(move |_| {
            let body = json!({"errors": [{"code": code, "message": "no"}]}).to_string();
            (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
        })
        .await;
        let r: OciReference = format!("oci://{refuser}/tools/calc:1.0").parse().unwrap();
        let err = client.pull(&r, &budget).await.unwrap_err();
        assert!(
            matches!(
                err,
                OciError::Denied { .. } | OciError::TooManyRequests { .. }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains(expect), "{err}");
    }
}
