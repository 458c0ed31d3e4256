//! Why the registry refused a tool.

use super::*;

/// Why a tool could not be registered.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools want the same name (and neither has a version that tells
    /// them apart).
    #[error(
        "tool `{name}` is defined twice: by {first} and by {second}; rename one of them, \
         or give both distinct versions"
    )]
    DuplicateName {
        /// The contested name.
        name: String,
        /// Where the registered tool comes from.
        first: String,
        /// Where the rejected tool comes from.
        second: String,
    },
    /// A tool lost its name to one from a source that takes precedence
    /// (see [`ToolRegistry`]: native tools, then plugins by file, then REST
    /// tools, then MCP servers by name): it is no longer served.
    #[error(
        "tool `{name}` of {displaced} is no longer served: {owner} offers the same name and \
         takes precedence; rename one of them"
    )]
    Displaced {
        /// The contested name.
        name: String,
        /// Where the tool that now has the name comes from.
        owner: String,
        /// Where the tool that lost it comes from.
        displaced: String,
    },
    /// The name is not one every provider accepts.
    #[error("tool name `{0}` is not valid: use 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`")]
    InvalidName(String),
    /// The version is empty or has characters other than `a-z A-Z 0-9 . _
    /// - +`.
    #[error(
        "tool `{name}` has version `{version}`, which is not valid: use 1 to 64 characters \
         of a-z, A-Z, 0-9, `.`, `_`, `-` and `+`, e.g. 1.2.0"
    )]
    InvalidVersion {
        /// The tool.
        name: String,
        /// The rejected version.
        version: String,
    },
    /// The input schema is not a valid JSON Schema.
    #[error("tool `{name}` has an invalid input schema: {message}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What the schema compiler said.
        message: String,
    },
}

impl RegistryError {
    /// The name of the tool this error is about.
    pub fn tool_name(&self) -> &str {
        match self {
            Self::DuplicateName { name, .. }
            | Self::Displaced { name, .. }
            | Self::InvalidVersion { name, .. }
            | Self::InvalidSchema { name, .. }
            | Self::InvalidName(name) => name,
        }
    }
}

pub(super) fn describe_origin(tool: &dyn Tool) -> String {
    let origin = match tool.origin() {
        ToolOrigin::Native => "a native tool".to_owned(),
        ToolOrigin::Plugin { path, .. } => format!("plugin {}", path.display()),
        ToolOrigin::Rest { url, file } => {
            crate::tools::rest::describe_origin(&url, file.as_deref())
        }
        ToolOrigin::Mcp { server } => format!("MCP server `{server}`"),
    };
    match tool.version() {
        Some(version) => format!("{origin} (version {version})"),
        None => origin,
    }
}
