//! What a tool answers: a structured JSON value, content parts (text,
//! images, audio, embedded resources), or both; and the hints a tool gives
//! about how it behaves.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One part of a tool's result besides its structured value: what an MCP
/// client shows a person, and what a model that reads images sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Its media type, e.g. `image/png`.
        media_type: String,
        /// Its bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
    /// Audio.
    Audio {
        /// Its media type, e.g. `audio/wav`.
        media_type: String,
        /// Its bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its media type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// Its contents, as text or as bytes.
        #[serde(flatten)]
        contents: ResourceContents,
    },
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(#[serde(with = "base64_bytes")] Vec<u8>),
}

impl Content {
    /// How many bytes the part carries.
    pub fn size(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Image { data, .. } | Self::Audio { data, .. } => data.len(),
            Self::Resource { contents, .. } => match contents {
                ResourceContents::Text(t) => t.len(),
                ResourceContents::Blob(b) => b.len(),
            },
        }
    }

    /// A short JSON description of the part without its bytes: what a
    /// reader that cannot take the part itself (a Chat Completions tool
    /// message, a log) is told instead.
    pub fn stand_in(&self) -> Value {
        match self {
            Self::Text { text } => json!({"type": "text", "text": text}),
            Self::Image { media_type, data } => {
                json!({"type": "image", "media_type": media_type, "bytes": data.len()})
            }
            Self::Audio { media_type, data } => {
                json!({"type": "audio", "media_type": media_type, "bytes": data.len()})
            }
            Self::Resource {
                uri, media_type, ..
            } => {
                json!({"type": "resource", "uri": uri, "media_type": media_type, "bytes": self.size()})
            }
        }
    }
}

/// A tool's successful result.
///
/// `structured` is the JSON value a tool's output schema describes (every
/// tool that answers JSON only has it and no content); `content` holds the
/// parts to show besides it, in order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Content parts besides it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<Content>,
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self {
            structured: Some(value),
            content: Vec::new(),
        }
    }
}

impl ToolOutput {
    /// The result as one JSON value, for readers that take JSON only: the
    /// structured value, or, when there is none, the content's
    /// [stand-ins](Content::stand_in) (`{"content": [...]}`); `null` for an
    /// empty result.
    pub fn to_json(&self) -> Value {
        match (&self.structured, self.content.is_empty()) {
            (Some(value), _) => value.clone(),
            (None, false) => {
                json!({"content": self.content.iter().map(Content::stand_in).collect::<Vec<_>>()})
            }
            (None, true) => Value::Null,
        }
    }

    /// [`to_json`](Self::to_json), consuming the output.
    pub fn into_json(self) -> Value {
        match self.structured {
            Some(value) => value,
            None => self.to_json(),
        }
    }
}

/// Hints about how a tool behaves, for clients and people: MCP's tool
/// annotations. Hints only, never a grant: what needs a person's approval
/// is the operator's policy, not the tool's word.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same input has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (the web), not a closed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// Bytes as base64 text in JSON (transcripts, `--json` output).
mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_only_output_is_its_value_and_content_only_output_is_described() {
        let plain = ToolOutput::from(json!({"n": 1}));
        assert_eq!(plain.to_json(), json!({"n": 1}));
        let picture = ToolOutput {
            structured: None,
            content: vec![Content::Image {
                media_type: "image/png".into(),
                data: vec![0; 10],
            }],
        };
        assert_eq!(
            picture.to_json(),
            json!({"content": [{"type": "image", "media_type": "image/png", "bytes": 10}]})
        );
        assert_eq!(ToolOutput::default().to_json(), Value::Null);
    }

    #[test]
    fn content_round_trips_through_json_with_its_bytes_in_base64() {
        let parts = vec![
            Content::Image {
                media_type: "image/png".into(),
                data: vec![137, 80, 78, 71],
            },
            Content::Resource {
                uri: "file:///a.txt".into(),
                media_type: Some("text/plain".into()),
                contents: ResourceContents::Text("hi".into()),
            },
            Content::Resource {
                uri: "x:b".into(),
                media_type: None,
                contents: ResourceContents::Blob(vec![1, 2]),
            },
        ];
        let text = serde_json::to_string(&parts).unwrap();
        assert!(text.contains("iVBORw=="), "{text}");
        let back: Vec<Content> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, parts);
    }

    #[test]
    fn annotations_use_mcp_names() {
        let a = ToolAnnotations {
            read_only_hint: Some(true),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            json!({"readOnlyHint": true})
        );
        assert!(ToolAnnotations::default().is_empty());
    }
}
