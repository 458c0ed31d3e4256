//! Turning a tool's return value into the JSON text the contract carries.

use serde::Serialize;

use crate::ToolError;

/// JSON text you already have, returned as the tool's output unchanged.
///
/// The SDK does not parse it: this is the escape hatch for output you
/// produced yourself (or, in toolhost's own tests, output that is *not* valid
/// JSON on purpose). The host checks every output, so invalid text becomes an
/// `invalid_output` error for the model, never a crash.
///
/// # Examples
///
/// ```
/// use toolhost_guest::{RawJson, ToolError};
///
/// fn cached_answer(_input: toolhost_guest::NoInput) -> Result<RawJson, ToolError> {
///     Ok(RawJson(r#"{"answer":42}"#.to_owned()))
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawJson(pub String);

/// What a tool function may return: any [`Serialize`] value (serialized with
/// `serde_json`), or [`RawJson`]. Sealed: you never implement it yourself.
pub trait ToolOutput: sealed::Sealed {
    /// The output as JSON text.
    ///
    /// # Errors
    ///
    /// [`ToolError::failed`] when the value cannot be serialized (a map with
    /// non-string keys, a `Serialize` impl that fails, ...).
    fn into_json(self) -> Result<String, ToolError>;
}

impl<T: Serialize> ToolOutput for T {
    fn into_json(self) -> Result<String, ToolError> {
        serde_json::to_string(&self)
            .map_err(|e| ToolError::failed(format!("could not serialize the tool's output: {e}")))
    }
}

impl ToolOutput for RawJson {
    fn into_json(self) -> Result<String, ToolError> {
        Ok(self.0)
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T: serde::Serialize> Sealed for T {}
    impl Sealed for super::RawJson {}
}
