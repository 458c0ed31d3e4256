//! The library's top-level modules import one another one way only
//! (docs/design.md): a cycle between two of them is a failure here, naming
//! the modules and a file with each import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toolhost_tests::plugins::workspace_root;

/// Every `.rs` file under `dir`, test files left out.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// The top-level modules a file's code names with `crate::NAME` (in paths
/// and in `use crate::{a, b}` groups), comments and test code left out.
fn imports(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|item| item.trim().split("::").next().unwrap_or(""))
                .collect()
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            vec![&rest[..end]]
        };
        found.extend(
            names
                .into_iter()
                .filter(|n| modules.contains(*n))
                .map(str::to_owned),
        );
    }
    found
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let src = workspace_root().join("host").join("src");
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).expect("host/src") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir()
            || (path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main")
        {
            modules.insert(name);
        }
    }
    assert!(
        modules.contains("toolbox") && modules.contains("config"),
        "{modules:?}"
    );
    // module -> (imported module -> a file that imports it)
    let mut edges: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for module in &modules {
        let dir = src.join(module);
        let mut files = Vec::new();
        if dir.is_dir() {
            sources(&dir, &mut files);
        } else {
            files.push(src.join(format!("{module}.rs")));
        }
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for import in imports(&text, &modules) {
                if &import != module {
                    edges
                        .entry(module.clone())
                        .or_default()
                        .entry(import)
                        .or_insert_with(|| file.clone());
                }
            }
        }
    }
    // A cycle exists iff some module reaches itself.
    for start in &modules {
        let mut stack: Vec<Vec<String>> = vec![vec![start.clone()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = path.last().expect("a path").clone();
            for next in edges
                .get(&last)
                .map(|e| e.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
            {
                if &next == start {
                    let mut cycle = path.clone();
                    cycle.push(next);
                    let shown: Vec<String> = cycle
                        .windows(2)
                        .map(|w| {
                            format!("{} -> {} ({})", w[0], w[1], edges[&w[0]][&w[1]].display())
                        })
                        .collect();
                    panic!("import cycle: {}", shown.join("; "));
                }
                if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push(longer);
                }
            }
        }
    }
}

#[test]
fn the_import_scan_sees_paths_and_groups_but_not_comments() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d"].map(str::to_owned).into();
    let text = "use crate::a::X;\n// crate::b::Y\nuse crate::{c::Z, text};\nfn f() { crate::d::g() }\n#[cfg(test)]\nmod tests { use crate::b; }";
    let found = imports(text, &modules);
    assert_eq!(found, ["a", "c", "d"].map(str::to_owned).into());
}
