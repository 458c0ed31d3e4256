//! The fuzz targets (`host/fuzz`, docs/security.md "Fuzzing") run on their
//! seed corpus and on every input a fuzzer ever crashed them with, so that
//! a fixed crash stays fixed and the targets build with every test run.

use std::path::{Path, PathBuf};

use toolhost_tests::plugins::workspace_root;

#[path = "../../host/fuzz/src/targets.rs"]
mod targets;

fn fuzz_dir() -> PathBuf {
    workspace_root().join("host").join("fuzz")
}

/// The files of `dir`, sorted; none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry reads").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Every target on every file of `kind` (`corpus` or `regressions`); the
/// inputs it panics on, named.
fn replay(kind: &str) -> Vec<String> {
    let mut failed = Vec::new();
    for (name, target) in targets::TARGETS {
        for file in inputs(&fuzz_dir().join(kind).join(name)) {
            let data = std::fs::read(&file).expect("an input reads");
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                failed.push(file.display().to_string());
            }
        }
    }
    failed
}

#[test]
fn every_target_has_a_seed_corpus_and_passes_it() {
    for (name, _) in targets::TARGETS {
        let seeds = inputs(&fuzz_dir().join("corpus").join(name));
        assert!(!seeds.is_empty(), "host/fuzz/corpus/{name}/ has no seeds");
    }
    let failed = replay("corpus");
    assert!(failed.is_empty(), "targets panicked on: {failed:#?}");
}

#[test]
fn no_crash_a_fuzzer_found_comes_back() {
    let failed = replay("regressions");
    assert!(failed.is_empty(), "targets panicked on: {failed:#?}");
}

/// Each target is a `cargo fuzz` binary of the same name, and the other
/// way round.
#[test]
fn the_fuzz_binaries_are_the_targets() {
    let mut binaries: Vec<String> = inputs(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .collect();
    binaries.sort();
    let mut names: Vec<String> = targets::TARGETS
        .iter()
        .map(|(n, _)| (*n).to_owned())
        .collect();
    names.sort();
    assert_eq!(binaries, names);
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("it reads");
    for name in &names {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "host/fuzz/Cargo.toml has no [[bin]] `{name}`"
        );
    }
}
