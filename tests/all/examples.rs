//! Integration tests: examples.
