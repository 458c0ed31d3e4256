//! The `toolhost new` scaffolds: the templates in `templates/` (compiled
//! in) and how their `{{key}}` placeholders are filled in ([`render`]):
//! quoted for the shell and TOML where a value lands in those.

use std::path::Path;

use anyhow::{Context, bail};

use super::{Lang, lang_name};

/// One file of a scaffold.
#[derive(Debug)]
pub(super) struct File {
    /// Path relative to the project directory.
    pub(super) path: &'static str,
    pub(super) text: String,
    pub(super) executable: bool,
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

// One table: each language's files and texts side by side; reads best whole.
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
pub(super) fn render(lang: Lang, name: &str, sdk: &Path) -> anyhow::Result<Vec<File>> {
    let t = templates(lang);
    let sdk_str = sdk
        .to_str()
        .context("the SDK root is not valid UTF-8; pass --sdk-root with another path")?;
    let (fuel, timeout_ms, memory_mb, limits_note) = t.limits;
    let values: [(&str, String); 14] = [
        ("name", name.to_owned()),
        // The URI scheme the host gives the plugin's resources.
        ("scheme", name.replace('_', "-")),
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
pub(super) fn shell_word(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new::source_file;

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
}
