//! Trust boundaries, as a user meets them: the working directory grants
//! nothing, the compile cache must be private, a granted directory stays the
//! directory that was granted, secrets never show, API keys go only where
//! they belong, and out-of-range limits are refused by name.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::CallContext;
use toolhost_tests::plugins::{
    copy_plugin, copy_plugin_from, hostile_dir, toolhost_bin, workspace_root,
};
use toolhost_tests::providers::{FakeOpenAi, Turn};

/// `toolhost ARGS` in `cwd`, with a private config home and cache, and
/// `env` on top.
fn toolhost_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(toolhost_bin());
    command
        .args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", cwd.join(".config-home"))
        .env("TOOLHOST_CACHE_DIR", cwd.join(".cache"))
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL");
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

fn json_out(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

/// A plugin directory holding `hostile_snoop` (granted `/data` read-only)
/// with a manifest that also asks for the environment variable `var`.
fn snoop_asking_for_env(dir: &Path, var: &str) {
    copy_plugin_from(hostile_dir(), "hostile_snoop", dir);
    std::fs::write(
        dir.join("hostile_snoop.toml"),
        format!(
            "[permissions]\nenv = [\"{var}\"]\n\n[[permissions.dirs]]\n\
             host = \"hostile_snoop.data\"\nguest = \"/data\"\nrw = false\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_toolhost_toml_in_the_working_directory_grants_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    let plugins = cwd.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    snoop_asking_for_env(&plugins, "TRUST_PROBE");
    std::fs::write(
        cwd.path().join("toolhost.toml"),
        "[allow]\nenv = [\"TRUST_PROBE\"]\n",
    )
    .unwrap();
    let list = ["list", "--plugins", "plugins", "--json"];

    let out = toolhost_in(cwd.path(), &list, &[]);
    let report = json_out(&out);
    assert!(report["tools"].as_array().unwrap().is_empty(), "{report}");
    let errors = report["errors"].to_string();
    assert!(
        errors.contains("TRUST_PROBE") && errors.contains("not allowed"),
        "{errors}"
    );
    assert!(
        text(&out).contains("ignoring ./toolhost.toml"),
        "{}",
        text(&out)
    );

    // The same file, named by the user, is honoured; so is the user's own.
    let named: Vec<&str> = list
        .into_iter()
        .chain(["--config", "toolhost.toml"])
        .collect();
    let out = toolhost_in(cwd.path(), &named, &[]);
    assert_eq!(json_out(&out)["errors"], json!([]), "{}", text(&out));
    let user = cwd.path().join(".config-home").join("toolhost");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::rename(cwd.path().join("toolhost.toml"), user.join("toolhost.toml")).unwrap();
    let out = toolhost_in(cwd.path(), &list, &[]);
    assert_eq!(json_out(&out)["errors"], json!([]), "{}", text(&out));
}

#[cfg(unix)]
#[test]
fn a_cache_directory_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;

    let cwd = tempfile::tempdir().unwrap();
    let plugins = cwd.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    copy_plugin("calc", &plugins);
    let cache = cwd.path().join("shared-cache");
    std::fs::create_dir(&cache).unwrap();
    let args = [
        "list",
        "--plugins",
        "plugins",
        "--cache-dir",
        "shared-cache",
    ];

    for mode in [0o770, 0o777, 0o1777] {
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = toolhost_in(cwd.path(), &args, &[]);
        assert_eq!(out.status.code(), Some(2), "mode {mode:o}: {}", text(&out));
        let message = text(&out);
        assert!(
            message.contains("refusing the compile cache directory")
                && message.contains("chmod 700"),
            "{message}"
        );
        assert_eq!(
            std::fs::read_dir(&cache).unwrap().count(),
            0,
            "nothing written"
        );
    }

    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = toolhost_in(cwd.path(), &args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // A fresh cache directory is created private, with private entries.
    let fresh = cwd.path().join("fresh").join("cache");
    let out = toolhost_in(
        cwd.path(),
        &[
            "list",
            "--plugins",
            "plugins",
            "--cache-dir",
            fresh.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fresh), 0o700);
    for entry in std::fs::read_dir(&fresh).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o600);
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_swapped_into_a_grant_between_calls_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let plugins = root.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    copy_plugin_from(hostile_dir(), "hostile_snoop", &plugins);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("allowed.txt"), "OUTSIDE THE GRANT").unwrap();

    let mut config = HostConfig {
        cache_dir: Some(workspace_root().join("target").join("test-cache")),
        ..HostConfig::default()
    };
    config.allow.dirs.push(plugins.clone());
    let host = PluginHost::new(config).unwrap();
    let report = host.load_dir(&plugins).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let registry = report.registry().expect("the loaded tools register");
    let ctx = CallContext::default();
    let read = || registry.call("hostile_read", json!({"path": "/data/allowed.txt"}), &ctx);
    let first = read().await.output.unwrap();
    let granted = first["content"].as_str().unwrap().to_owned();

    // Between two calls, the granted directory becomes a symlink that
    // leads outside every allowed root.
    let data = plugins.join("hostile_snoop.data");
    std::fs::rename(&data, plugins.join("moved-away")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &data).unwrap();

    match read().await.output {
        Ok(second) => assert_eq!(second["content"], json!(granted), "{second}"),
        Err(e) => assert!(!e.message.contains("OUTSIDE"), "{e:?}"),
    }
}

#[test]
fn no_environment_value_appears_in_any_json() {
    let cwd = tempfile::tempdir().unwrap();
    let plugins = cwd.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    snoop_asking_for_env(&plugins, "TRUST_PROBE");
    let secret = "s3cret-value-that-must-not-print";
    let env = [("TRUST_PROBE", secret)];
    let allow = [
        "--plugins",
        "plugins",
        "--allow-env",
        "TRUST_PROBE",
        "--json",
    ];
    let with = |cmd: &[&'static str]| cmd.iter().chain(&allow).copied().collect::<Vec<&str>>();

    let list = toolhost_in(cwd.path(), &with(&["list"]), &env);
    assert_eq!(list.status.code(), Some(0), "{}", text(&list));
    let inspect = toolhost_in(
        cwd.path(),
        &with(&["inspect", "plugins/hostile_snoop.wasm"]),
        &env,
    );
    assert_eq!(inspect.status.code(), Some(0), "{}", text(&inspect));
    for out in [&list, &inspect] {
        let all = text(out);
        assert!(
            all.contains("TRUST_PROBE"),
            "the grant is listed by name: {all}"
        );
        assert!(!all.contains(secret), "the value leaked: {all}");
    }
    let human = toolhost_in(
        cwd.path(),
        &["list", "--plugins", "plugins", "--allow-env", "TRUST_PROBE"],
        &env,
    );
    assert!(!text(&human).contains(secret), "{}", text(&human));

    // The guest itself does get the value: the grant works.
    let call = toolhost_in(
        cwd.path(),
        &with(&["call", "hostile_env", "--input", r#"{"key":"TRUST_PROBE"}"#]),
        &env,
    );
    assert_eq!(
        json_out(&call)["output"]["value"],
        json!(secret),
        "{}",
        text(&call)
    );
}

/// Keys set in the environment of every `run` below.
const KEYS: [(&str, &str); 2] = [
    ("OPENAI_API_KEY", "sk-openai-secret"),
    ("DEEPSEEK_API_KEY", "sk-deepseek-secret"),
];

/// `toolhost run hello --provider openai EXTRA` in `cwd` with [`KEYS`] and
/// `env`, off the runtime (the fake provider serves on it meanwhile).
async fn run_openai(cwd: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let base = [
        "run",
        "hello",
        "--provider",
        "openai",
        "--plugins",
        "plugins",
    ];
    let args: Vec<String> = base.iter().chain(extra).map(|s| s.to_string()).collect();
    let env: Vec<(String, String)> = KEYS
        .iter()
        .chain(env)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let cwd = cwd.to_owned();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        toolhost_in(&cwd, &args, &env)
    })
    .await
    .unwrap()
}

/// The `Authorization` header of every request `fake` got.
fn auth_headers(fake: &FakeOpenAi) -> Vec<Option<String>> {
    fake.requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn an_api_key_goes_only_where_it_belongs() {
    let cwd = tempfile::tempdir().unwrap();
    let plugins = cwd.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    copy_plugin("calc", &plugins);
    // A loopback server gets no environment key.
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::text("hi"));
    let url = fake.url();
    let out = run_openai(cwd.path(), &["--base-url", &url], &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(auth_headers(&fake), [None]);

    // Nor does a look-alike of DeepSeek's host (reached through a proxy
    // that is really the fake), which once got DEEPSEEK_API_KEY.
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::text("hi"));
    let proxy = fake.url().trim_end_matches("/v1").to_owned();
    let out = run_openai(
        cwd.path(),
        &["--base-url", "http://api.deepseek.com.evil.example/v1"],
        &[
            ("HTTP_PROXY", proxy.as_str()),
            ("http_proxy", proxy.as_str()),
            ("NO_PROXY", ""),
            ("no_proxy", ""),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "{}", text(&out));
    assert_eq!(
        requests[0].header("host"),
        Some("api.deepseek.com.evil.example")
    );
    assert_eq!(auth_headers(&fake), [None]);

    // The key for another server comes from --api-key-env ...
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::text("hi"));
    let url = fake.url();
    let out = run_openai(
        cwd.path(),
        &["--base-url", &url, "--api-key-env", "MY_LOCAL_KEY"],
        &[("MY_LOCAL_KEY", "local-key")],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(auth_headers(&fake), [Some("Bearer local-key".to_owned())]);

    // ... or from the SDKs' pair, OPENAI_BASE_URL naming that server.
    let fake = FakeOpenAi::start().await;
    fake.push(Turn::text("hi"));
    let url = fake.url();
    let out = run_openai(cwd.path(), &[], &[("OPENAI_BASE_URL", &url)]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        auth_headers(&fake),
        [Some("Bearer sk-openai-secret".to_owned())]
    );
}

#[test]
fn limits_that_overflow_are_refused_by_name() {
    let cwd = tempfile::tempdir().unwrap();
    let plugins = cwd.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    copy_plugin("calc", &plugins);
    let manifest = plugins.join("calc.toml");
    let original = std::fs::read_to_string(&manifest).unwrap();
    for (key, value) in [
        ("memory_mb", "1152921504606846976"),
        ("output_kb", "18446744073709551615"),
        ("timeout_ms", "18446744073709551615"),
    ] {
        std::fs::write(&manifest, format!("[limits]\n{key} = {value}\n")).unwrap();
        let out = toolhost_in(
            cwd.path(),
            &[
                "call",
                "calc_eval",
                "--input",
                r#"{"expression":"1+1"}"#,
                "--plugins",
                "plugins",
            ],
            &[],
        );
        assert_ne!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            text(&out).contains(&format!("`{key}` = {value}")),
            "{}",
            text(&out)
        );
        assert!(!text(&out).contains("panicked"), "{}", text(&out));
    }

    // The same in the operator's config stops the host, naming the key.
    std::fs::write(&manifest, &original).unwrap();
    std::fs::write(
        cwd.path().join("host.toml"),
        "[limits.max]\ntimeout_ms = 18446744073709551615\n",
    )
    .unwrap();
    let out = toolhost_in(
        cwd.path(),
        &["list", "--plugins", "plugins", "--config", "host.toml"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("`timeout_ms` = 18446744073709551615"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn an_embedder_hands_a_plugin_a_value_without_the_process_environment() {
    let dir = tempfile::tempdir().unwrap();
    snoop_asking_for_env(dir.path(), "TRUST_GIVEN");
    let config = HostConfig::default()
        .cache_dir(workspace_root().join("target").join("test-cache"))
        .allow_dir(dir.path())
        .env("TRUST_GIVEN", "given-only-to-the-plugin");
    assert!(std::env::var_os("TRUST_GIVEN").is_none());
    assert!(!format!("{config:?}").contains("given-only"), "{config:?}");
    let host = PluginHost::new(config).unwrap();
    let report = host.load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let out = report
        .registry()
        .expect("the loaded tools register")
        .call(
            "hostile_env",
            json!({"key": "TRUST_GIVEN"}),
            &CallContext::default(),
        )
        .await
        .output
        .unwrap();
    assert_eq!(out["value"], json!("given-only-to-the-plugin"), "{out}");
    assert_eq!(out["visible"], json!(["TRUST_GIVEN"]), "{out}");
}
