//! `toolhost new`: scaffold a plugin project in one of the guest languages.
//!
//! A project is a directory with the tool's source, a `plugin.toml`
//! manifest, a README and a `build.sh` that builds `dist/NAME.wasm` with
//! `dist/NAME.toml` beside it, so that `toolhost call NAME_greet --plugins
//! dist` works right after `./build.sh`. toolhost is not on any package
//! registry, so the project builds against a toolhost checkout (its `wit/`
//! and `sdk-guest/`): by default the one this binary was built from.
//!
//! The templates live in `templates/` and are compiled in; `{{key}}`
//! placeholders are filled in by [`render`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use super::UsageError;

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
    // Names cargo refuses for a package, or that clash with the crates the
    // project depends on.
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

/// One file of a scaffold.
#[derive(Debug)]
struct File {
    /// Path relative to the project directory.
    path: &'static str,
    text: String,
    executable: bool,
}

/// Template text, by language.
struct Templates {
    files: &'static [(&'static str, &'static str, bool)],
    lang_title: &'static str,
    /// Per-language manifest limits: fuel, timeout_ms, memory_mb, and why.
    limits: (u64, u64, u64, &'static str),
    /// README lines listing the language's own files.
    files_doc: &'static str,
    /// README sentences on the scaffold's other tools (after the greeting
    /// tool's); `{{name}}` is the plugin's name.
    more_tools: &'static str,
    toolchain: &'static str,
    sdk_note: &'static str,
    gitignore: &'static str,
}

macro_rules! template {
    ($path:literal) => {
        include_str!(concat!("templates/", $path))
    };
}

fn templates(lang: Lang) -> Templates {
    match lang {
        Lang::Rust => Templates {
            files: &[
                ("Cargo.toml", template!("rust/Cargo.toml.tmpl"), false),
                ("src/lib.rs", template!("rust/lib.rs.tmpl"), false),
                ("build.sh", template!("rust/build.sh"), true),
            ],
            lang_title: "Rust",
            more_tools: "",
            limits: (50_000_000, 1000, 16, "A Rust tool needs little."),
            files_doc: "- `src/lib.rs`: the tool: a typed function, exported with `export_tools!`.\n\
                        - `Cargo.toml`: a workspace of its own; the SDK is a path dependency.\n",
            toolchain: "Needs Rust with the `wasm32-wasip2` target (`build.sh` adds it with \
                        rustup when it is missing).",
            sdk_note: "`Cargo.toml` names it as a path dependency (`toolhost-guest`); \
                       change that path if the checkout moves.",
            gitignore: "/target/\n/dist/\n",
        },
        Lang::Python => Templates {
            files: &[
                ("app.py", template!("python/app.py"), false),
                ("build.sh", template!("python/build.sh"), true),
            ],
            lang_title: "Python",
            more_tools: " A second tool, `{{name}}_count`, counts the lines and words of a \
                         text: it declares an output schema, which the host checks every \
                         result against, and reports its progress on a long text.",
            limits: (
                200_000_000,
                2000,
                32,
                "A Python component carries the CPython interpreter: it needs more\n# memory and fuel than a Rust one.",
            ),
            files_doc: "- `app.py`: the tools: plain functions decorated with `@tool`; their \
                        schemas come from their type hints and docstrings.\n",
            toolchain: "Needs `componentize-py` (`.ci/install-guest-toolchains.sh python` in the \
                        toolhost checkout).",
            sdk_note: "`build.sh` names the checkout at its top; `TOOLHOST_SDK=/path/to/toolhost \
                       ./build.sh` overrides it.",
            gitignore: "/dist/\n__pycache__/\n",
        },
        Lang::Js => Templates {
            files: &[
                ("plugin.js", template!("js/plugin.js"), false),
                (
                    "rolldown.config.mjs",
                    template!("js/rolldown.config.mjs"),
                    false,
                ),
                ("package.json", template!("js/package.json"), false),
                ("build.sh", template!("js/build.sh"), true),
            ],
            lang_title: "JavaScript",
            more_tools: " A second tool, `{{name}}_count`, counts the lines and words of a \
                         text: it declares an output schema, which the host checks every \
                         result against, and reports its progress on a long text.",
            limits: (
                200_000_000,
                2000,
                32,
                "Built with the QuickJS engine: a few MiB of memory per call.",
            ),
            files_doc: "- `plugin.js`: the tools: each a `run` function with JSON Schemas for its \
                        input and output.\n\
                        - `rolldown.config.mjs`: maps `\"toolhost\"` to the SDK for the bundle step.\n\
                        - `package.json`: packages the plugin imports (`npm install NAME`); the \
                        build bundles them.\n",
            toolchain: "Needs Node.js; jco comes from the toolhost checkout's `plugins/js` \
                        (installed there on first use, `.ci/install-guest-toolchains.sh js`).",
            sdk_note: "`build.sh` names the checkout at its top; `TOOLHOST_SDK=/path/to/toolhost \
                       ./build.sh` overrides it.",
            gitignore: "/dist/\n/node_modules/\n",
        },
        Lang::C => Templates {
            files: &[
                ("plugin.c", template!("c/plugin.c"), false),
                ("build.sh", template!("c/build.sh"), true),
            ],
            lang_title: "C",
            more_tools: "",
            limits: (50_000_000, 1000, 16, "A C tool needs little."),
            files_doc: "- `plugin.c`: the tool: one function, listed with its input and output \
                        schemas in `TOOLHOST_PLUGIN` (every `*.c` here is compiled).\n",
            toolchain: "Needs clang, lld, wasi-libc and wasm-tools \
                        (`.ci/install-guest-toolchains.sh c` in the toolhost checkout).",
            sdk_note: "`build.sh` names the checkout at its top; `TOOLHOST_SDK=/path/to/toolhost \
                       ./build.sh` overrides it.",
            gitignore: "/dist/\n",
        },
        Lang::Go => Templates {
            files: &[
                ("plugin.go", template!("go/plugin.go"), false),
                ("build.sh", template!("go/build.sh"), true),
            ],
            lang_title: "Go",
            more_tools: "",
            limits: (
                200_000_000,
                2000,
                32,
                "Go's runtime and GC make a Go tool heavier than a C one.",
            ),
            files_doc: "- `plugin.go`: the tool: a typed function registered in `init()`, \
                        its schemas derived from its input and result types (every `*.go` \
                        here is built, as `package plugin`).\n",
            toolchain: "Needs go and wasm-tools (`.ci/install-guest-toolchains.sh go` in the \
                        toolhost checkout).",
            sdk_note: "`build.sh` names the checkout at its top; `TOOLHOST_SDK=/path/to/toolhost \
                       ./build.sh` overrides it.",
            gitignore: "/dist/\n",
        },
    }
}

/// Every file of the `lang` scaffold for plugin `name`, with the SDK at `sdk`.
fn render(lang: Lang, name: &str, sdk: &Path) -> anyhow::Result<Vec<File>> {
    let t = templates(lang);
    let sdk_str = sdk
        .to_str()
        .context("the SDK root is not valid UTF-8; pass --sdk-root with another path")?;
    let (fuel, timeout_ms, memory_mb, limits_note) = t.limits;
    let values: [(&str, String); 13] = [
        ("name", name.to_owned()),
        ("lang", lang_name(lang).to_owned()),
        ("lang_title", t.lang_title.to_owned()),
        ("sdk_sh", shell_word(sdk_str)),
        ("sdk_toml", toml_escape(sdk_str)?),
        ("fuel", fuel.to_string()),
        ("timeout_ms", timeout_ms.to_string()),
        ("memory_mb", memory_mb.to_string()),
        ("limits_note", limits_note.to_owned()),
        ("files", t.files_doc.to_owned()),
        ("more_tools", t.more_tools.replace("{{name}}", name)),
        ("toolchain", t.toolchain.to_owned()),
        ("sdk_note", t.sdk_note.to_owned()),
    ];
    let fill = |template: &str| -> String {
        values
            .iter()
            .fold(template.to_owned(), |text, (key, value)| {
                text.replace(&format!("{{{{{key}}}}}"), value)
            })
    };
    let mut files: Vec<File> = t
        .files
        .iter()
        .map(|(path, template, executable)| File {
            path,
            text: fill(template),
            executable: *executable,
        })
        .collect();
    files.push(File {
        path: "plugin.toml",
        text: fill(template!("common/plugin.toml")),
        executable: false,
    });
    files.push(File {
        path: "README.md",
        text: fill(template!("common/README.md")),
        executable: false,
    });
    files.push(File {
        path: ".gitignore",
        text: t.gitignore.to_owned(),
        executable: false,
    });
    Ok(files)
}

/// `s` as one POSIX shell word.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `s` as the inside of a TOML basic string.
fn toml_escape(s: &str) -> anyhow::Result<String> {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                bail!(
                    "the SDK root contains a control character; pass --sdk-root with another path"
                )
            }
            c => out.push(c),
        }
    }
    Ok(out)
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

    const ALL: [Lang; 5] = [Lang::Rust, Lang::Python, Lang::Js, Lang::C, Lang::Go];

    #[test]
    fn every_placeholder_is_filled_in_every_language() {
        for lang in ALL {
            let files = render(lang, "demo", Path::new("/opt/tool host")).unwrap();
            for file in &files {
                assert!(
                    !file.text.contains("{{"),
                    "{lang:?} {}: unfilled placeholder in\n{}",
                    file.path,
                    file.text
                );
            }
            let names: Vec<&str> = files.iter().map(|f| f.path).collect();
            for needed in ["build.sh", "plugin.toml", "README.md", source_file(lang)] {
                assert!(
                    names.contains(&needed),
                    "{lang:?} has no {needed}: {names:?}"
                );
            }
            let source = files.iter().find(|f| f.path == source_file(lang)).unwrap();
            assert!(source.text.contains("demo_greet"), "{lang:?}");
        }
    }

    #[test]
    fn the_manifest_parses_and_sets_the_greeting() {
        for lang in ALL {
            let files = render(lang, "demo", Path::new("/sdk")).unwrap();
            let manifest = files.iter().find(|f| f.path == "plugin.toml").unwrap();
            let parsed: toolhost::plugin::Manifest = toml::from_str(&manifest.text)
                .unwrap_or_else(|e| panic!("{lang:?}: {e}\n{}", manifest.text));
            assert_eq!(parsed.config["greeting"], "Hello");
            assert!(parsed.permissions.dirs.is_empty() && parsed.permissions.env.is_empty());
        }
    }

    #[test]
    fn the_sdk_path_is_quoted_for_the_shell_and_toml() {
        let files = render(Lang::Rust, "demo", Path::new(r#"/a "b"\c"#)).unwrap();
        let cargo = files.iter().find(|f| f.path == "Cargo.toml").unwrap();
        let parsed: toml::Value = toml::from_str(&cargo.text).unwrap();
        assert_eq!(
            parsed["dependencies"]["toolhost-guest"]["path"].as_str(),
            Some(r#"/a "b"\c/sdk-guest"#)
        );
        assert_eq!(shell_word("/plain/path"), "/plain/path");
        assert_eq!(shell_word("/it's here"), r"'/it'\''s here'");
    }

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
