//! The built artifacts the tests run against: the bundled plugins (built
//! once per test process by `plugins/build.sh`), the `toolhost` binary and
//! the examples (built by cargo on demand, so `cargo test` alone works).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace root")
        .to_owned()
}

/// `target/<profile>` of the running test binary.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    // target/<profile>/deps/all-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps")
        .to_owned()
}

fn cargo_build(args: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let profile = match profile_dir().file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_owned(),
        Some(other) => other.to_owned(),
    };
    let mut command = Command::new(cargo);
    // cargo sets these for the test binary; a build script that watches
    // them (ring's: `rerun-if-env-changed=CARGO_MANIFEST_DIR`, `CARGO_PKG_*`)
    // would otherwise rerun here, and again in the next `cargo test`, and
    // rebuild everything above it both times.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || matches!(
                &*name,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_MANIFEST_LINKS"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
                    | "OUT_DIR"
            )
        {
            command.env_remove(&*name);
        }
    }
    let status = command
        .current_dir(workspace_root())
        .arg("build")
        .args(["--profile", &profile])
        .args(args)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build {args:?} failed");
}

/// Run `plugins/build.sh` once per test process.
fn build_plugins() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = workspace_root();
        let status = Command::new("bash")
            .arg(root.join("plugins").join("build.sh"))
            .current_dir(&root)
            .status()
            .expect("bash runs plugins/build.sh");
        assert!(
            status.success(),
            "plugins/build.sh failed; see its output above"
        );
    });
}

/// PATH with the project-local guest toolchains (`target/toolchains/venv/bin`,
/// where `.ci/install-guest-toolchains.sh` puts them) first, as
/// `.ci/toolchains.sh` sets it for the build scripts.
pub fn toolchain_path() -> std::ffi::OsString {
    let venv = workspace_root()
        .join("target")
        .join("toolchains")
        .join("venv")
        .join("bin");
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(venv).chain(std::env::split_paths(&rest)))
        .expect("PATH entries join")
}

/// The directory with every bundled example plugin built (`target/plugins`).
///
/// # Panics
///
/// When `plugins/build.sh` fails: its output says why.
pub fn plugin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build_plugins();
        workspace_root().join("target").join("plugins")
    })
}

/// The directory with the misbehaving test plugins (`target/plugins-hostile`).
pub fn hostile_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build_plugins();
        workspace_root().join("target").join("plugins-hostile")
    })
}

/// The directory with the plugins that serve peers' test suites
/// (`target/plugins-fixtures`), such as the tools the MCP conformance suite
/// calls by name.
pub fn fixtures_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build_plugins();
        workspace_root().join("target").join("plugins-fixtures")
    })
}

/// A fresh directory holding copies of the named plugins (`NAME.wasm`,
/// `NAME.toml` and `NAME.data/` where they exist), for tests that add or
/// break files.
pub fn plugin_subset(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for name in names {
        copy_plugin(name, dir.path());
    }
    dir
}

/// Copy one built example plugin (with its manifest and data) into `dest`.
/// Assert that the calc plugin in `registry` still answers (`6*7` is 42):
/// what a hostile plugin loaded beside it must not break.
///
/// # Panics
///
/// When the call fails or answers otherwise.
pub async fn assert_calc_serves(registry: &toolhost::tools::ToolRegistry) {
    let out = registry
        .call(
            "calc_eval",
            serde_json::json!({"expression": "6*7"}),
            &toolhost::tools::CallContext::default(),
        )
        .await
        .output
        .expect("calc answers");
    assert_eq!(out, serde_json::json!({"value": 42.0}));
}

pub fn copy_plugin(name: &str, dest: &Path) {
    copy_plugin_from(plugin_dir(), name, dest);
}

/// Copy plugin `name` (`NAME.wasm`, `NAME.toml`, `NAME.data/`) from `src`
/// into `dest`.
pub fn copy_plugin_from(src: &Path, name: &str, dest: &Path) {
    let wasm = src.join(format!("{name}.wasm"));
    assert!(wasm.is_file(), "no built plugin {}", wasm.display());
    std::fs::copy(&wasm, dest.join(format!("{name}.wasm"))).expect("copy wasm");
    let toml = src.join(format!("{name}.toml"));
    if toml.is_file() {
        std::fs::copy(&toml, dest.join(format!("{name}.toml"))).expect("copy manifest");
    }
    let data = src.join(format!("{name}.data"));
    if data.is_dir() {
        copy_dir(&data, &dest.join(format!("{name}.data")));
    }
}

/// The `hostile_schemas` fixture as `NAME.wasm` in `dir`, its tool list
/// (and, for contract 0.2, its output schemas and annotations) chosen by
/// `mode` (see plugins/hostile/schemas).
pub fn schemas_plugin(dir: &Path, name: &str, mode: &str) {
    std::fs::copy(
        hostile_dir().join("hostile_schemas.wasm"),
        dir.join(format!("{name}.wasm")),
    )
    .expect("copy hostile_schemas.wasm");
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!("[config]\nmode = \"{mode}\"\n"),
    )
    .expect("write its manifest");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy file");
        }
    }
}

/// Build the workspace's binaries and examples once per test process.
///
/// `--workspace` on purpose: building one package alone resolves
/// dependency features differently from the test build and would compile
/// wasmtime a second time.
fn build_programs() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| cargo_build(&["--workspace", "--bins", "--examples"]));
}

/// The `toolhost` binary, built in the test's own profile.
pub fn toolhost_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        build_programs();
        profile_dir().join("toolhost")
    })
}

/// `toolhost ARGS` as the CLI tests run it: the tests' compile cache, the
/// fake providers' key in `TOOLHOST_TEST_KEY`, no plugin directory or
/// config from the environment, stdin closed; off the async runtime (a
/// fake provider may be serving on it).
///
/// # Panics
///
/// When the program cannot start.
pub async fn toolhost_run(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        cli_command(toolhost_bin())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("toolhost starts")
    })
    .await
    .expect("the command ran")
}

/// `program` (`toolhost`, or a script that runs it) with the environment
/// of [`toolhost_run`]: the tests' compile cache, `TOOLHOST_TEST_KEY`, and
/// no plugin directory or config from the environment.
pub fn cli_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    command
        .env(
            "TOOLHOST_CACHE_DIR",
            workspace_root().join("target").join("test-cache"),
        )
        .env("TOOLHOST_TEST_KEY", "test-key")
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG");
    command
}

/// An example program from `examples/`, built in the test's own profile.
pub fn example_bin(name: &str) -> PathBuf {
    build_programs();
    profile_dir().join("examples").join(name)
}
