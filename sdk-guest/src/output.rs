//! Turning a tool's return value into the result the contract carries: a
//! structured JSON value, content parts (text, images, audio, resources),
//! or both.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
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

/// One part of a result besides the structured value: what an MCP client
/// shows a person, and what a model that reads images sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text.
    Text(String),
    /// An image: its bytes and media type (`image/png`, `image/jpeg`, ...).
    Image { media_type: String, data: Vec<u8> },
    /// Audio: its bytes and media type (`audio/wav`, `audio/mpeg`, ...).
    Audio { media_type: String, data: Vec<u8> },
    /// A resource embedded in the result: its URI and its contents.
    Resource {
        uri: String,
        media_type: Option<String>,
        contents: ResourceContents,
    },
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    Text(String),
    Blob(Vec<u8>),
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// An image part with the given media type.
    pub fn image(media_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::Image {
            media_type: media_type.into(),
            data,
        }
    }

    /// A PNG image part.
    pub fn png(data: Vec<u8>) -> Self {
        Self::image("image/png", data)
    }

    /// An audio part with the given media type.
    pub fn audio(media_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::Audio {
            media_type: media_type.into(),
            data,
        }
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        media_type: Option<&str>,
        text: impl Into<String>,
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            media_type: media_type.map(str::to_owned),
            contents: ResourceContents::Text(text.into()),
        }
    }

    /// An embedded binary resource.
    pub fn resource_blob(uri: impl Into<String>, media_type: Option<&str>, data: Vec<u8>) -> Self {
        Self::Resource {
            uri: uri.into(),
            media_type: media_type.map(str::to_owned),
            contents: ResourceContents::Blob(data),
        }
    }
}

/// A result with content parts: a structured value `T` (optional) and
/// [`Content`] in order. The structured value is what the tool's output
/// schema describes; the content is what a person or a model looks at.
///
/// # Examples
///
/// ```
/// use toolhost_guest::{Content, Output, ToolError};
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Summary {
///     points: usize,
/// }
///
/// fn plot(_input: toolhost_guest::NoInput) -> Result<Output<Summary>, ToolError> {
///     let png: Vec<u8> = vec![0x89, b'P', b'N', b'G']; // drawn somewhere
///     Ok(Output::new(Summary { points: 3 }).with(Content::png(png)))
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Output<T = NoValue> {
    value: Option<T>,
    content: Vec<Content>,
}

/// The structured value of an [`Output`] that has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NoValue {}

impl<T> Output<T> {
    /// A result whose structured value is `value`, with no content yet.
    pub fn new(value: T) -> Self {
        Self {
            value: Some(value),
            content: Vec::new(),
        }
    }

    /// Adds a content part after those already there.
    #[must_use]
    pub fn with(mut self, part: Content) -> Self {
        self.content.push(part);
        self
    }
}

impl Output<NoValue> {
    /// A result of content parts only, with no structured value.
    pub fn content(parts: impl IntoIterator<Item = Content>) -> Self {
        Self {
            value: None,
            content: parts.into_iter().collect(),
        }
    }
}

/// The output schema of an [`Output`] is its structured value's.
impl<T: JsonSchema> JsonSchema for Output<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// A tool's result as the contract carries it; made by [`ToolOutput`], used
/// by the code `export_tools!` generates.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The structured value as JSON text.
    pub json: Option<String>,
    pub content: Vec<Content>,
}

/// What a tool function may return: any [`Serialize`] value (serialized with
/// `serde_json`), [`RawJson`], or an [`Output`] with content parts. Sealed:
/// you never implement it yourself.
pub trait ToolOutput: sealed::Sealed {
    /// The output as the contract carries it.
    ///
    /// # Errors
    ///
    /// [`ToolError::failed`] when the value cannot be serialized (a map with
    /// non-string keys, a `Serialize` impl that fails, ...).
    fn into_result(self) -> Result<Reply, ToolError>;
}

fn to_json<T: Serialize>(value: &T) -> Result<String, ToolError> {
    serde_json::to_string(value)
        .map_err(|e| ToolError::failed(format!("could not serialize the tool's output: {e}")))
}

impl<T: Serialize> ToolOutput for T {
    fn into_result(self) -> Result<Reply, ToolError> {
        Ok(Reply {
            json: Some(to_json(&self)?),
            content: Vec::new(),
        })
    }
}

impl ToolOutput for RawJson {
    fn into_result(self) -> Result<Reply, ToolError> {
        Ok(Reply {
            json: Some(self.0),
            content: Vec::new(),
        })
    }
}

impl<T: Serialize> ToolOutput for Output<T> {
    fn into_result(self) -> Result<Reply, ToolError> {
        let json = self.value.as_ref().map(to_json).transpose()?;
        Ok(Reply {
            json,
            content: self.content,
        })
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T: serde::Serialize> Sealed for T {}
    impl Sealed for super::RawJson {}
    impl<T: serde::Serialize> Sealed for super::Output<T> {}
}
