//! The fuzz targets' bodies (`targets`), shared by the `cargo fuzz`
//! binaries in `fuzz_targets/` and the test suite's replay of the corpus
//! (`tests/all/fuzz.rs`).

pub mod targets;
