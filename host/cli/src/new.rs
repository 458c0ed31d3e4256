//! `toolhost new`: scaffold a plugin project in one of the guest languages.
//!
//! A project is a directory with the tool's source, a `plugin.toml`
//! manifest, a README and a `build.sh` that builds `dist/NAME.wasm` with
//! `dist/NAME.toml` beside it, so that `toolhost call NAME_greet --plugins
//! dist` works right after `./build.sh`. toolhost is not on any package
//! registry, so the project builds against a toolhost checkout (its `wit/`
//! and `sdk-guest/`): by default the one this binary was built from.
//!
//! The templates live in `new/templates/` and are compiled in; `{{key}}`
//! placeholders are filled in by [`template::render`].

mod template;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use super::UsageError;
use template::{File, render, shell_word};

/// The checkout this binary was built from: the default SDK root.
const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Longest plugin name: `NAME_greet` and names like it stay well inside the
/// 64 characters a tool name may have.
const MAX_NAME_LEN: usize = 48;

/// A guest language `toolhost new` can scaffold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// Rust with the `toolhost-guest` crate (cargo, wasm32-wasip2).
    Rust,
    /// Python with `toolhost_sdk` (componentize-py).
    Python,
    /// JavaScript with `toolhost.js` (jco, QuickJS).
    Js,
    /// C with `toolhost.h` (clang, wasi-libc, wasm-tools).
    C,
    /// Go with the `toolhost` package (go, wasm-tools).
    Go,
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// Plugin name: lowercase letters, digits and `_`, starting with a
    /// letter. It names the component (NAME.wasm) and prefixes its tools
    /// (NAME_greet).
    name: String,
    /// Language of the plugin.
    #[arg(long, value_enum)]
    lang: Lang,
    /// Create the project in DIR/NAME, which must be missing or empty.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// The toolhost checkout whose SDK (wit/, sdk-guest/) the project builds
    /// against. Default: the checkout this toolhost was built from.
    #[arg(long, value_name = "PATH", env = "TOOLHOST_SDK")]
    sdk_root: Option<PathBuf>,
}

pub async fn run(args: NewArgs) -> anyhow::Result<ExitCode> {
    validate_name(args.lang, &args.name).map_err(UsageError)?;
    let sdk = sdk_root(args.sdk_root.as_deref(), args.lang).map_err(UsageError)?;
    let project = args.dir.join(&args.name);
    check_target(&project).map_err(UsageError)?;
    let files = render(args.lang, &args.name, &sdk).map_err(UsageError)?;
    write_project(&project, &files)
        .with_context(|| format!("cannot create the project in {}", project.display()))?;

    let lang = lang_name(args.lang);
    let name = &args.name;
    println!(
        "Created {lang} plugin `{name}` in {}, building against the toolhost SDK in {}.",
        project.display(),
        sdk.display()
    );
    println!();
    println!("Next steps:");
    println!("  cd {}", shell_word(&project.to_string_lossy()));
    println!("  ./build.sh");
    println!("  toolhost call {name}_greet --input '{{\"name\":\"Ada\"}}' --plugins dist");
    println!();
    println!(
        "Add tools in {}; the guide is {}.",
        source_file(args.lang),
        sdk.join("docs")
            .join("plugins")
            .join(format!("{lang}.md"))
            .display()
    );
    Ok(ExitCode::SUCCESS)
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "rust",
        Lang::Python => "python",
        Lang::Js => "js",
        Lang::C => "c",
        Lang::Go => "go",
    }
}

fn source_file(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "src/lib.rs",
        Lang::Python => "app.py",
        Lang::Js => "plugin.js",
        Lang::C => "plugin.c",
        Lang::Go => "plugin.go",
    }
}

/// Names cargo refuses for a package, or that clash with the crates the
/// project depends on.
const RUST_RESERVED: &[&str] = &[
    "abstract",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "crate",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
    "alloc",
    "core",
    "std",
    "test",
    "proc_macro",
    "serde",
    "serde_json",
    "schemars",
    "toolhost_guest",
    "wit_bindgen",
];

/// A plugin name becomes a file name, a tool-name prefix, an identifier in
/// every language and (for Rust) a crate name.
fn validate_name(lang: Lang, name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !starts_with_letter || !rest_ok || name.len() > MAX_NAME_LEN {
        bail!(
            "invalid plugin name `{name}`: use 1 to {MAX_NAME_LEN} lowercase letters, digits and `_`, \
             starting with a letter (e.g. `weather` or `my_tools`); it becomes the file name \
             NAME.wasm and the prefix of every tool (NAME_greet)"
        );
    }
    if lang == Lang::Rust && RUST_RESERVED.contains(&name) {
        bail!(
            "`{name}` cannot name a Rust plugin: it is a Rust keyword or the name of a crate the \
             project needs; pick another name (e.g. `{name}_tools`)"
        );
    }
    Ok(())
}

/// The SDK root, absolute, checked to hold the contract and this language's SDK.
fn sdk_root(flag: Option<&Path>, lang: Lang) -> anyhow::Result<PathBuf> {
    let (root, origin) = match flag {
        Some(path) => (path.to_owned(), "--sdk-root"),
        None => (
            PathBuf::from(BUILT_FROM),
            "the default (the checkout toolhost was built from)",
        ),
    };
    let hint = "pass --sdk-root PATH (or set TOOLHOST_SDK) with the path of a toolhost checkout";
    let root = std::fs::canonicalize(&root).map_err(|e| {
        anyhow::anyhow!(
            "the toolhost SDK root {} from {origin} is not usable ({e}); {hint}",
            root.display()
        )
    })?;
    let needed = match lang {
        Lang::Rust => "sdk-guest/Cargo.toml",
        Lang::Python => "sdk-guest/python/toolhost_sdk/__init__.py",
        Lang::Js => "sdk-guest/js/toolhost.js",
        Lang::C => "sdk-guest/c/toolhost.h",
        Lang::Go => "sdk-guest/go/toolhost/toolhost.go",
    };
    // Python and JavaScript projects build against contract 0.2 (wit/0.2).
    let contract = match lang {
        Lang::Python | Lang::Js => "wit/0.2/plugin.wit",
        Lang::Rust | Lang::C | Lang::Go => "wit/plugin.wit",
    };
    for file in [contract, needed] {
        if !root.join(file).is_file() {
            bail!(
                "{} (from {origin}) is not a toolhost checkout: it has no {file}; {hint}",
                root.display()
            );
        }
    }
    if root.to_str().is_none() {
        bail!(
            "the SDK root {} is not valid UTF-8, so build scripts and Cargo.toml cannot name it; \
             {hint}",
            root.display()
        );
    }
    Ok(root)
}

/// Refuse to write into anything but a missing or empty directory.
fn check_target(project: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(project) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{} already exists and is not empty; refusing to overwrite it: choose another \
                     NAME or --dir, or remove it",
                    project.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if project.exists() && !project.is_dir() => bail!(
            "{} already exists and is not a directory ({e}); refusing to overwrite it",
            project.display()
        ),
        Err(e) => bail!("cannot look at {}: {e}", project.display()),
    }
}

fn write_project(project: &Path, files: &[File]) -> anyhow::Result<()> {
    let created = !project.exists();
    let result = files.iter().try_for_each(|file| write_file(project, file));
    if result.is_err() && created {
        // Leave nothing half-made behind; the error says what went wrong.
        let _ = std::fs::remove_dir_all(project);
    }
    result
}

fn write_file(project: &Path, file: &File) -> anyhow::Result<()> {
    let path = project.join(file.path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, &file.text)
        .with_context(|| format!("cannot write {}", path.display()))?;
    if file.executable {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("cannot make {} executable", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["a", "weather", "my_tools2"] {
            validate_name(Lang::Rust, good).unwrap();
        }
        for bad in [
            "",
            "Weather",
            "2fast",
            "_x",
            "my-tools",
            "a b",
            &"x".repeat(49),
        ] {
            assert!(validate_name(Lang::Go, bad).is_err(), "{bad:?} accepted");
        }
        assert!(validate_name(Lang::Rust, "serde").is_err());
        assert!(validate_name(Lang::Rust, "fn").is_err());
        validate_name(Lang::Python, "test").unwrap();
    }
}
