//! Integrity, as an operator and a plugin author meet it: a manifest pin, a
//! lock file and signatures each refuse a component changed by one byte,
//! naming both digests, while the other plugins load; the lock file is
//! policy and is never picked up from where the process runs; `toolhost
//! lock`, `keygen` and `sign` round trip through the CLI.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use toolhost::config::HostConfig;
use toolhost::plugin::{LoadReport, PluginHost};
use toolhost::signing::{Sha256Digest, SigningKey};
use toolhost_tests::plugins::{copy_plugin, toolhost_bin, workspace_root};

/// `toolhost ARGS` in `cwd`, with a private config home and cache.
fn toolhost_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(toolhost_bin())
        .args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", cwd.join(".config-home"))
        .env("TOOLHOST_CACHE_DIR", cwd.join(".cache"))
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("TOOLHOST_LOCK")
        .output()
        .expect("toolhost starts")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `toolhost list ARGS --json` in `cwd`: the plugins that loaded, and the
/// load errors.
fn list(cwd: &Path, args: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut all = vec!["list", "--json"];
    all.extend_from_slice(args);
    let out = toolhost_in(cwd, &all);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let mut plugins: Vec<String> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["source"]["plugin"].as_str().unwrap().to_owned())
        .collect();
    plugins.dedup();
    let errors = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .collect();
    (plugins, errors)
}

/// A working directory with `plugins/` holding calc and text.
fn workspace() -> tempfile::TempDir {
    let cwd = tempfile::tempdir().unwrap();
    let plugins = cwd.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    copy_plugin("calc", &plugins);
    copy_plugin("text", &plugins);
    cwd
}

/// Change one byte of `file` (its last); the digests before and after.
fn tamper(file: &Path) -> (Sha256Digest, Sha256Digest) {
    let mut bytes = std::fs::read(file).unwrap();
    let before = Sha256Digest::of(&bytes);
    *bytes.last_mut().unwrap() ^= 0x01;
    std::fs::write(file, &bytes).unwrap();
    (before, Sha256Digest::of(&bytes))
}

fn digest_of(file: &Path) -> Sha256Digest {
    Sha256Digest::of(&std::fs::read(file).unwrap())
}

/// Prepend `sha256 = "<digest>"` to the plugin's manifest.
fn pin(manifest: &Path, digest: &Sha256Digest) {
    let old = std::fs::read_to_string(manifest).unwrap_or_default();
    std::fs::write(manifest, format!("sha256 = \"{digest}\"\n{old}")).unwrap();
}

async fn load(dir: &Path, config: HostConfig) -> LoadReport {
    let cache = workspace_root().join("target").join("test-cache");
    PluginHost::new(config.cache_dir(cache))
        .expect("the sandbox starts")
        .load_dir(dir)
        .await
        .unwrap()
}

fn names(report: &LoadReport) -> Vec<&str> {
    report.plugins.iter().map(|p| p.name()).collect()
}

fn the_error(report: &LoadReport) -> String {
    let errors: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors[0].clone()
}

#[tokio::test]
async fn a_manifest_pin_loads_its_component_and_refuses_any_other_even_from_a_warm_cache() {
    let cwd = workspace();
    let plugins = cwd.path().join("plugins");
    let calc = plugins.join("calc.wasm");
    pin(&plugins.join("calc.toml"), &digest_of(&calc));

    let report = load(&plugins, HostConfig::default()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(names(&report), ["calc", "text"]);

    // The same bytes, compiled and cached just now, under a pin for other
    // bytes: the warm load still checks them.
    let other = Sha256Digest::of(b"another build");
    let manifest = std::fs::read_to_string(plugins.join("calc.toml")).unwrap();
    let (_, rest) = manifest.split_once('\n').unwrap();
    std::fs::write(plugins.join("calc.toml"), rest).unwrap();
    pin(&plugins.join("calc.toml"), &other);
    let report = load(&plugins, HostConfig::default()).await;
    let error = the_error(&report);
    assert!(
        error.contains("calc.wasm: refused")
            && error.contains(&other.to_string())
            && error.contains(&digest_of(&calc).to_string()),
        "{error}"
    );
    assert_eq!(names(&report), ["text"]);

    // One byte changed under the original pin.
    std::fs::write(plugins.join("calc.toml"), rest).unwrap();
    let pinned = digest_of(&calc);
    pin(&plugins.join("calc.toml"), &pinned);
    let (_, tampered) = tamper(&calc);
    let report = load(&plugins, HostConfig::default()).await;
    let error = the_error(&report);
    assert!(
        error.contains(&pinned.to_string())
            && error.contains(&tampered.to_string())
            && error.contains("manifest pins"),
        "{error}"
    );
    assert_eq!(names(&report), ["text"]);
}

#[test]
fn a_lock_file_pins_components_and_manifests_and_refuses_what_it_does_not_list() {
    let cwd = workspace();
    let plugins = cwd.path().join("plugins");
    let out = toolhost_in(
        cwd.path(),
        &["lock", "plugins", "-o", "policy/toolhost.lock"],
    );
    assert!(
        !out.status.success(),
        "no such directory yet: {}",
        text(&out)
    );
    std::fs::create_dir(cwd.path().join("policy")).unwrap();
    let out = toolhost_in(
        cwd.path(),
        &["lock", "plugins", "-o", "policy/toolhost.lock"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("pinned 2 plugins"), "{}", text(&out));
    let lock = std::fs::read_to_string(cwd.path().join("policy/toolhost.lock")).unwrap();
    let calc = plugins.join("calc.wasm");
    assert!(lock.contains(&digest_of(&calc).to_string()), "{lock}");
    assert!(
        lock.contains(&digest_of(&plugins.join("text.toml")).to_string()),
        "{lock}"
    );
    // Without -o it goes to standard output, the same text.
    let out = toolhost_in(cwd.path(), &["lock", "plugins"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), lock);

    let locked = ["--plugins", "plugins", "--lock", "policy/toolhost.lock"];
    let (loaded, errors) = list(cwd.path(), &locked);
    assert_eq!(loaded, ["calc", "text"], "{errors:?}");
    assert!(errors.is_empty(), "{errors:?}");

    // One byte of calc.wasm changed: calc refused with both digests, text loads.
    let (before, after) = tamper(&calc);
    let (loaded, errors) = list(cwd.path(), &locked);
    assert_eq!(loaded, ["text"]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("calc.wasm: refused")
            && errors[0].contains(&before.to_string())
            && errors[0].contains(&after.to_string())
            && errors[0].contains("toolhost lock"),
        "{}",
        errors[0]
    );

    // A manifest edited (a grant asked for, say) after locking.
    let text_toml = plugins.join("text.toml");
    let locked_manifest = digest_of(&text_toml);
    let edited = std::fs::read_to_string(&text_toml).unwrap() + "\n[config]\nmode = \"x\"\n";
    std::fs::write(&text_toml, edited).unwrap();
    let (loaded, errors) = list(cwd.path(), &locked);
    assert!(loaded.is_empty(), "{loaded:?}");
    let manifest_error = errors.iter().find(|e| e.contains("text.wasm")).unwrap();
    assert!(
        manifest_error.contains("manifest")
            && manifest_error.contains(&locked_manifest.to_string())
            && manifest_error.contains(&digest_of(&text_toml).to_string()),
        "{manifest_error}"
    );

    // A plugin the lock does not list.
    copy_plugin("scratchpad", &plugins);
    let (_, errors) = list(cwd.path(), &locked);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("scratchpad") && e.contains("not in the lock file")),
        "{errors:?}"
    );

    // Re-locking after review takes the directory as it is now.
    let out = toolhost_in(
        cwd.path(),
        &["lock", "plugins", "-o", "policy/toolhost.lock"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let (_, errors) = list(cwd.path(), &locked);
    assert!(errors.iter().all(|e| !e.contains("refused")), "{errors:?}");
}

#[test]
fn a_lock_file_is_used_only_where_the_operator_names_it() {
    let cwd = workspace();
    let plugins = cwd.path().join("plugins");
    // A lock that lists nothing, where a checkout might carry one: in the
    // working directory and in the plugin directory.
    let empty = "version = 1\n";
    std::fs::write(cwd.path().join("toolhost.lock"), empty).unwrap();
    std::fs::write(plugins.join("toolhost.lock"), empty).unwrap();

    let out = toolhost_in(cwd.path(), &["list", "--plugins", "plugins", "--json"]);
    assert!(
        text(&out).contains("ignoring ./toolhost.lock"),
        "{}",
        text(&out)
    );
    let (loaded, errors) = list(cwd.path(), &["--plugins", "plugins"]);
    assert_eq!(loaded, ["calc", "text"], "{errors:?}");
    assert!(errors.is_empty(), "{errors:?}");

    // Named, it is in force.
    let (loaded, errors) = list(
        cwd.path(),
        &["--plugins", "plugins", "--lock", "toolhost.lock"],
    );
    assert!(loaded.is_empty(), "{loaded:?}");
    assert_eq!(errors.len(), 2, "{errors:?}");

    // From the host config, relative to the config file, wherever the
    // process runs.
    let etc = cwd.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    std::fs::write(etc.join("toolhost.lock"), empty).unwrap();
    std::fs::write(
        etc.join("toolhost.toml"),
        "[integrity]\nlock_file = \"toolhost.lock\"\n",
    )
    .unwrap();
    let (loaded, errors) = list(
        cwd.path(),
        &["--plugins", "plugins", "--config", "etc/toolhost.toml"],
    );
    assert!(
        loaded.is_empty() && errors.len() == 2,
        "{loaded:?} {errors:?}"
    );

    // A lock file named but missing is a configuration error, not "no lock".
    let out = toolhost_in(
        cwd.path(),
        &["list", "--plugins", "plugins", "--lock", "missing.lock"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("cannot read lock file missing.lock"),
        "{}",
        text(&out)
    );
}

#[test]
fn keygen_sign_and_required_signatures_round_trip_through_the_cli() {
    let cwd = workspace();
    let plugins = cwd.path().join("plugins");

    let out = toolhost_in(cwd.path(), &["keygen", "author.key"]);
    assert!(out.status.success(), "{}", text(&out));
    let public = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(public.starts_with("ed25519:"), "{public}");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("author.key.pub"))
            .unwrap()
            .trim(),
        public
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(cwd.path().join("author.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A key is never overwritten.
    let out = toolhost_in(cwd.path(), &["keygen", "author.key"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("already exists"), "{}", text(&out));

    let out = toolhost_in(
        cwd.path(),
        &["sign", "plugins/calc.wasm", "--key", "author.key"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(plugins.join("calc.wasm.sig").is_file());

    let config = cwd.path().join("signed.toml");
    std::fs::write(
        &config,
        format!("[integrity]\nrequire_signatures = true\ntrusted_keys = [\"{public}\"]\n"),
    )
    .unwrap();
    let signed = ["--plugins", "plugins", "--config", "signed.toml"];

    // calc is signed by a trusted key; text is not signed.
    let (loaded, errors) = list(cwd.path(), &signed);
    assert_eq!(loaded, ["calc"]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("text.wasm: refused: it is not signed"),
        "{}",
        errors[0]
    );

    // text signed by a key the host does not trust.
    assert!(
        toolhost_in(cwd.path(), &["keygen", "stranger.key"])
            .status
            .success()
    );
    let out = toolhost_in(
        cwd.path(),
        &["sign", "plugins/text.wasm", "--key", "stranger.key"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stranger = std::fs::read_to_string(cwd.path().join("stranger.key.pub")).unwrap();
    let (loaded, errors) = list(cwd.path(), &signed);
    assert_eq!(loaded, ["calc"]);
    assert!(
        errors[0].contains("does not trust") && errors[0].contains(stranger.trim()),
        "{}",
        errors[0]
    );

    // One byte of the signed calc.wasm changed.
    let (signed_digest, tampered) = tamper(&plugins.join("calc.wasm"));
    let (loaded, errors) = list(cwd.path(), &signed);
    assert!(loaded.is_empty(), "{loaded:?}");
    let calc_error = errors.iter().find(|e| e.contains("calc.wasm")).unwrap();
    assert!(
        calc_error.contains(&signed_digest.to_string())
            && calc_error.contains(&tampered.to_string()),
        "{calc_error}"
    );
}

#[cfg(unix)]
#[test]
fn sign_refuses_a_key_file_others_can_read() {
    use std::os::unix::fs::PermissionsExt;

    let cwd = workspace();
    let key = cwd.path().join("author.key");
    std::fs::write(&key, SigningKey::generate().unwrap().to_file_text()).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = toolhost_in(
        cwd.path(),
        &["sign", "plugins/calc.wasm", "--key", "author.key"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("chmod 600"), "{}", text(&out));
    assert!(!cwd.path().join("plugins/calc.wasm.sig").exists());
}

#[tokio::test]
async fn a_signature_is_checked_through_the_library_and_a_forged_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    copy_plugin("calc", dir.path());
    copy_plugin("text", dir.path());
    let key = SigningKey::generate().unwrap();
    for name in ["calc", "text"] {
        let wasm = std::fs::read(dir.path().join(format!("{name}.wasm"))).unwrap();
        let sig = dir.path().join(format!("{name}.wasm.sig"));
        std::fs::write(sig, key.sign(&wasm).to_file_text()).unwrap();
    }
    let mut config = HostConfig::default();
    config.integrity.require_signatures = true;
    config.integrity.trusted_keys.push(key.public_key());
    let report = load(dir.path(), config.clone()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);

    // calc's signature file altered to claim text's digest... with calc's
    // own bytes: the digests differ, and are both named.
    let text_sig = std::fs::read_to_string(dir.path().join("text.wasm.sig")).unwrap();
    std::fs::write(dir.path().join("calc.wasm.sig"), &text_sig).unwrap();
    let report = load(dir.path(), config.clone()).await;
    let error = the_error(&report);
    assert!(
        error.contains("calc.wasm: refused") && error.contains("is for SHA-256"),
        "{error}"
    );
    assert_eq!(names(&report), ["text"]);

    // A signature whose bytes were altered does not verify.
    let calc_wasm = std::fs::read(dir.path().join("calc.wasm")).unwrap();
    let good = key.sign(&calc_wasm).to_file_text();
    let hex = good
        .lines()
        .find_map(|l| l.strip_prefix("signature = \""))
        .unwrap()
        .trim_end_matches('"');
    let mut digits: Vec<char> = hex.chars().collect();
    digits[10] = if digits[10] == '0' { '1' } else { '0' };
    let forged = good.replace(hex, &digits.into_iter().collect::<String>());
    std::fs::write(dir.path().join("calc.wasm.sig"), forged).unwrap();
    let report = load(dir.path(), config.clone()).await;
    let error = the_error(&report);
    assert!(
        error.contains("calc.wasm: refused") && error.contains("does not verify"),
        "{error}"
    );

    // Signatures required with no key to trust: a configuration error.
    config.integrity.trusted_keys.clear();
    let err = PluginHost::new(config).unwrap_err().to_string();
    assert!(err.contains("trusted_keys"), "{err}");
}
