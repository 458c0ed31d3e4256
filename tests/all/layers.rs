//! The library's top-level modules import one another one way only, down
//! the layer table of docs/design.md: a module the table does not place,
//! a row for a module that is gone, and an import that does not go down
//! (a cycle included) are failures here, naming the modules and a file
//! with each import.

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

/// The top-level modules of `host/src`: its folders and its `.rs` files
/// other than `lib.rs`.
fn top_level_modules(src: &Path) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("host/src") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && name != "lib") {
            modules.insert(name);
        }
    }
    modules
}

/// module -> (imported module -> a file that imports it), for every
/// top-level module of `src`.
fn import_edges(
    src: &Path,
    modules: &BTreeSet<String>,
) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let mut edges: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for module in modules {
        let dir = src.join(module);
        let mut files = Vec::new();
        if dir.is_dir() {
            sources(&dir, &mut files);
        } else {
            files.push(src.join(format!("{module}.rs")));
        }
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for import in imports(&text, modules) {
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
    edges
}

/// The layer table of a design document: each row's layer (a number) and
/// the modules its second column names in backticks (`name` or `name/`).
/// Errors name the row that cannot be read.
fn layer_table(design: &str) -> Result<BTreeMap<String, u32>, String> {
    let mut layers = BTreeMap::new();
    let rows = design
        .lines()
        .skip_while(|l| !l.starts_with("| layer |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(layer), Some(names)) = (cells.get(1), cells.get(2)) else {
            return Err(format!("a row without a layer and modules: {row}"));
        };
        let layer: u32 = layer
            .parse()
            .map_err(|_| format!("a layer that is not a number: {row}"))?;
        let names: Vec<&str> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|n| n.trim_end_matches('/'))
            .collect();
        if names.is_empty() {
            return Err(format!("a row that names no module: {row}"));
        }
        for name in names {
            if layers.insert(name.to_owned(), layer).is_some() {
                return Err(format!("`{name}` is placed twice"));
            }
        }
    }
    if layers.is_empty() {
        return Err("no layer table (a table whose header starts `| layer |`)".to_owned());
    }
    Ok(layers)
}

/// What breaks the table's rule in `edges`: an unplaced module, a row for
/// no module, an import that does not go to a lower layer.
fn layer_faults(
    layers: &BTreeMap<String, u32>,
    modules: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeMap<String, PathBuf>>,
) -> Vec<String> {
    let mut faults = Vec::new();
    for module in modules.iter().filter(|m| !layers.contains_key(*m)) {
        faults.push(format!("`{module}` is not in the layer table"));
    }
    for module in layers.keys().filter(|m| !modules.contains(*m)) {
        faults.push(format!(
            "the layer table names `{module}`, which host/src does not have"
        ));
    }
    for (from, imports) in edges {
        for (to, file) in imports {
            if let (Some(a), Some(b)) = (layers.get(from), layers.get(to))
                && a <= b
            {
                faults.push(format!(
                    "`{from}` (layer {a}) imports `{to}` (layer {b}) in {}",
                    file.display()
                ));
            }
        }
    }
    faults
}

#[test]
fn every_import_goes_down_the_layer_table_of_the_design() {
    let root = workspace_root();
    let src = root.join("host").join("src");
    let design = std::fs::read_to_string(root.join("docs").join("design.md")).expect("design.md");
    let layers = layer_table(&design).unwrap_or_else(|e| panic!("docs/design.md: {e}"));
    let modules = top_level_modules(&src);
    assert!(
        modules.contains("toolbox") && modules.contains("config"),
        "{modules:?}"
    );
    let faults = layer_faults(&layers, &modules, &import_edges(&src, &modules));
    assert!(
        faults.is_empty(),
        "docs/design.md's layer table does not hold:\n{}",
        faults.join("\n")
    );
}

#[test]
fn the_layer_check_finds_each_kind_of_fault() {
    let table = "| layer | module | owns |\n| --- | --- | --- |\n| 2 | `top/` | a |\n| 1 | `mid`, `gone` | b |\n| 0 | `low` | c |\n";
    let layers = layer_table(table).unwrap();
    assert_eq!(layers["top"], 2);
    assert_eq!(layers["gone"], 1);
    let modules: BTreeSet<String> = ["top", "mid", "low", "new"].map(str::to_owned).into();
    let mut edges: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    fn import(edges: &mut BTreeMap<String, BTreeMap<String, PathBuf>>, from: &str, to: &str) {
        edges
            .entry(from.to_owned())
            .or_default()
            .insert(to.to_owned(), PathBuf::from(format!("{from}.rs")));
    }
    import(&mut edges, "top", "low");
    import(&mut edges, "mid", "low");
    assert!(
        layer_faults(
            &layers,
            &["top", "mid", "low", "gone"].map(str::to_owned).into(),
            &edges
        )
        .is_empty()
    );
    import(&mut edges, "low", "mid");
    let faults = layer_faults(&layers, &modules, &edges);
    assert_eq!(faults.len(), 3, "{faults:?}");
    assert!(faults[0].contains("`new` is not in the layer table"));
    assert!(faults[1].contains("`gone`"));
    assert!(faults[2].contains("`low` (layer 0) imports `mid` (layer 1) in low.rs"));
    // Same layer is not down.
    let mut same = BTreeMap::new();
    same.insert(
        "mid".to_owned(),
        BTreeMap::from([("gone".to_owned(), PathBuf::from("mid.rs"))]),
    );
    assert_eq!(
        layer_faults(
            &layers,
            &["top", "mid", "low", "gone"].map(str::to_owned).into(),
            &same
        )
        .len(),
        1
    );
    assert!(layer_table("| 1 | `a` |").is_err(), "no header");
    assert!(layer_table("| layer | module |\n| --- | --- |\n| top | `a` |\n").is_err());
    assert!(layer_table("| layer | module |\n| --- | --- |\n| 1 | `a` |\n| 0 | `a` |\n").is_err());
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let src = workspace_root().join("host").join("src");
    let modules = top_level_modules(&src);
    let edges = import_edges(&src, &modules);
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
