//! Variable values handed to the host by whoever runs it.
//!
//! The library never reads the process environment: a program (or the
//! `toolhost` CLI, which passes its own environment in) says which values
//! exist, and the operator's config says which names plugins, REST
//! headers and MCP servers may be granted. A test or an embedder can then
//! grant a secret without touching its own environment, and nothing a
//! library call does depends on variables it was not given.

use std::collections::BTreeMap;
use std::fmt;

/// Named values (secrets among them). `Debug` shows names, never values.
///
/// ```
/// use toolhost::environ::Environment;
///
/// let env = Environment::from_vars([("API_TOKEN", "s3cret")]);
/// assert_eq!(env.get("API_TOKEN"), Some("s3cret"));
/// assert_eq!(env.get("HOME"), None);
/// assert!(!format!("{env:?}").contains("s3cret"));
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// The values `vars` (a later one wins): e.g. `std::env::vars()` in a
    /// program that wants the host to see its environment.
    pub fn from_vars<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut env = Self::new();
        env.extend(vars);
        env
    }

    /// Set `name` to `value`.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// Add `vars` (a later one wins over an earlier value).
    pub fn extend<K: Into<String>, V: Into<String>>(
        &mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) {
        for (name, value) in vars {
            self.set(name, value);
        }
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Whether no value is given.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}
