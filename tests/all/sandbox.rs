//! Integration tests: sandbox.
