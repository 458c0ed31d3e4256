//! The host's imports: logging and manifest config.

use crate::bindings::toolhost::plugin::host as wit;

/// Log lines through the host's logger, tagged with the plugin's name.
///
/// The host cuts long messages and cuts off a call that logs too much, so log
/// what helps an operator, not every step. Outside a toolhost (a native unit
/// test) these functions panic: keep them out of the logic you unit-test.
///
/// # Examples
///
/// ```no_run
/// toolhost_guest::log::info(format!("read {} bytes", 42));
/// ```
pub mod log {
    use super::wit;

    /// Log at trace level.
    pub fn trace(message: impl AsRef<str>) {
        wit::log(wit::Level::Trace, message.as_ref());
    }

    /// Log at debug level.
    pub fn debug(message: impl AsRef<str>) {
        wit::log(wit::Level::Debug, message.as_ref());
    }

    /// Log at info level.
    pub fn info(message: impl AsRef<str>) {
        wit::log(wit::Level::Info, message.as_ref());
    }

    /// Log at warn level.
    pub fn warn(message: impl AsRef<str>) {
        wit::log(wit::Level::Warn, message.as_ref());
    }

    /// Log at error level.
    pub fn error(message: impl AsRef<str>) {
        wit::log(wit::Level::Error, message.as_ref());
    }
}

/// The value of `key` in the `[config]` table of the plugin's manifest
/// (`NAME.toml` beside `NAME.wasm`), or `None` when the manifest does not set
/// it. Config is plain data for the plugin; it grants nothing.
///
/// # Examples
///
/// ```no_run
/// let greeting = toolhost_guest::config("greeting").unwrap_or_else(|| "hello".to_owned());
/// ```
pub fn config(key: &str) -> Option<String> {
    wit::config(key)
}
