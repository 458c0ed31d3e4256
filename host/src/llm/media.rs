//! Images and audio in tool results and user messages, as each wire
//! format can take them.
//!
//! A tool result's [`parts`](super::ToolResult::parts) (and a user
//! message's, [`Message::User`]) go to the model in the shapes its API
//! documents there; a part the API does not take there (audio everywhere,
//! an image a text-only API cannot take, a media type outside the API's
//! list) becomes a text stand-in that names its media type and size, so
//! the model knows something was there and why it cannot see it. Each
//! format turns a [`Part`] into its JSON in one place, for both.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::{LlmError, Message};
use crate::tools::Content;

/// What one wire format takes in a tool result besides text.
#[derive(Debug, Clone, Copy)]
pub(super) struct MediaRules {
    /// The image media types it takes; empty: none (text only).
    pub(super) images: &'static [&'static str],
    /// Why an image is not shown when it takes none.
    pub(super) text_only: &'static str,
    /// Where the parts go, for the stand-in of audio: `tool results`.
    pub(super) place: &'static str,
}

impl MediaRules {
    /// Anthropic Messages: `image` blocks in `tool_result.content`.
    pub(super) const ANTHROPIC: Self = Self {
        images: &["image/jpeg", "image/png", "image/gif", "image/webp"],
        text_only: "",
        place: "tool results",
    };
    /// The Responses API: `input_image` items in
    /// `function_call_output.output`.
    pub(super) const RESPONSES: Self = Self {
        images: &["image/png", "image/jpeg", "image/webp", "image/gif"],
        text_only: "",
        place: "tool results",
    };
    /// Gemini 3 models: `inlineData` parts of a `functionResponse`.
    pub(super) const GEMINI_MULTIMODAL: Self = Self {
        images: &["image/png", "image/jpeg", "image/webp"],
        text_only: "",
        place: "tool results",
    };
    /// Gemini models before 3: a function response is JSON only.
    pub(super) const GEMINI_JSON_ONLY: Self = Self {
        images: &[],
        text_only: "this model takes JSON only in function responses (Gemini 3 models take images)",
        place: "tool results",
    };
    /// Chat Completions: a `tool` message is text.
    pub(super) const CHAT: Self = Self {
        images: &[],
        text_only: "this API takes text only in tool results",
        place: "tool results",
    };

    /// A user message of Anthropic Messages (`image` blocks), the
    /// Responses API (`input_image`) and Chat Completions (`image_url`
    /// parts): the same four image types.
    pub(super) const USER: Self = Self {
        images: &["image/png", "image/jpeg", "image/webp", "image/gif"],
        text_only: "",
        place: "user messages",
    };
    /// A Gemini user turn (`inlineData` parts), every model.
    pub(super) const GEMINI_USER: Self = Self {
        images: &[
            "image/png",
            "image/jpeg",
            "image/webp",
            "image/heic",
            "image/heif",
        ],
        text_only: "",
        place: "user messages",
    };
}

/// One part of a tool result, as a wire format sends it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part<'a> {
    /// Text: a text part of the result, or a stand-in.
    Text(Cow<'a, str>),
    /// An image the format takes.
    Image {
        /// Its media type, one the format takes.
        media_type: &'a str,
        /// Its bytes.
        data: &'a [u8],
    },
}

impl Part<'_> {
    /// The bytes of an image as base64 text.
    pub(super) fn base64(data: &[u8]) -> String {
        STANDARD.encode(data)
    }

    /// The image as a `data:` URL, as OpenAI's APIs take it.
    pub(super) fn data_url(media_type: &str, data: &[u8]) -> String {
        format!("data:{media_type};base64,{}", Self::base64(data))
    }
}

/// The parts of a result for a format with `rules`, in order.
pub(super) fn render<'a>(parts: &'a [Content], rules: MediaRules) -> Vec<Part<'a>> {
    parts
        .iter()
        .map(|part| match part {
            Content::Text { text } => Part::Text(Cow::Borrowed(text)),
            Content::Image { media_type, data } if rules.images.contains(&media_type.as_str()) => {
                Part::Image { media_type, data }
            }
            Content::Image { media_type, data } if rules.images.is_empty() => {
                Part::Text(stand_in(media_type, data.len(), rules.text_only).into())
            }
            Content::Image { media_type, data } => {
                let why = format!("this API takes {} only", rules.images.join(", "));
                Part::Text(stand_in(media_type, data.len(), &why).into())
            }
            Content::Audio { media_type, data } => Part::Text(
                stand_in(
                    media_type,
                    data.len(),
                    &format!("this API takes no audio in {}", rules.place),
                )
                .into(),
            ),
            other => Part::Text(other.stand_in().to_string().into()),
        })
        .collect()
}

/// `text` (unless empty: APIs reject empty text parts), then `parts` as
/// [`render`] makes them, empty stand-ins left out: the content of a
/// tool result or a user message that has parts.
pub(super) fn with_text<'a>(
    text: &'a str,
    parts: &'a [Content],
    rules: MediaRules,
) -> impl Iterator<Item = Part<'a>> {
    let text = (!text.is_empty()).then(|| Part::Text(text.into()));
    text.into_iter()
        .chain(render(parts, rules))
        .filter(|part| !matches!(part, Part::Text(text) if text.is_empty()))
}

/// The text for a format that takes text only: `text`, then each part's
/// text or stand-in on a line of its own. Borrowed when there are no parts.
pub(super) fn text_only<'a>(
    text: &'a str,
    parts: &'a [Content],
    rules: MediaRules,
) -> Cow<'a, str> {
    if parts.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for part in render(parts, rules) {
        let Part::Text(line) = part else { continue };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    Cow::Owned(out)
}

/// The parts of a message: a tool result's or a user message's.
fn parts_of(message: &Message) -> &[Content] {
    match message {
        Message::Tool(result) => &result.parts,
        Message::User { parts, .. } => parts,
        _ => &[],
    }
}

/// Whether a tool result or user message of `messages` holds an image.
pub(super) fn has_images(messages: &[Message]) -> bool {
    messages.iter().any(|m| {
        parts_of(m)
            .iter()
            .any(|p| matches!(p, Content::Image { .. }))
    })
}

/// `messages` with every image of a tool result or user message replaced
/// by its text stand-in, saying `why`.
pub(super) fn without_images(messages: &[Message], why: &str) -> Vec<Message> {
    let mut messages = messages.to_vec();
    for message in &mut messages {
        let parts = match message {
            Message::Tool(result) => &mut result.parts,
            Message::User { parts, .. } => parts,
            _ => continue,
        };
        for part in parts {
            if let Content::Image { media_type, data } = part {
                let text = stand_in(media_type, data.len(), why);
                *part = Content::Text { text };
            }
        }
    }
    messages
}

/// Whether `error` is a server saying the model takes no image input:
/// an HTTP error whose message says images (or vision, or multimodal
/// input) are not supported, as llama.cpp ("image input is not
/// supported"), LM Studio ("Model does not support images"), vLLM ("is
/// not a multimodal model") and OpenAI ("image_url is only supported by
/// certain models") word it.
pub(crate) fn refuses_images(error: &LlmError) -> bool {
    let LlmError::Status {
        status, message, ..
    } = error
    else {
        return false;
    };
    if !(400..600).contains(status) {
        return false;
    }
    let message = message.to_ascii_lowercase();
    let about_images = ["image", "vision", "multimodal", "multi-modal"]
        .iter()
        .any(|w| message.contains(w));
    let refused = [
        "not supported",
        "unsupported",
        "does not support",
        "doesn't support",
        "not a multimodal",
        "only supported by certain models",
        "cannot read",
        "missing data required for image",
    ]
    .iter()
    .any(|w| message.contains(w));
    about_images && refused
}

/// `[image/png, 12 KB, not shown: WHY]`.
pub(crate) fn stand_in(media_type: &str, bytes: usize, why: &str) -> String {
    format!("[{media_type}, {}, not shown: {why}]", size(bytes))
}

/// A size as people read it: `512 bytes`, `12 KB`, `3.4 MB`.
fn size(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{} KB", bytes.div_ceil(1_000)),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(media_type: &str, n: usize) -> Content {
        Content::Image {
            media_type: media_type.into(),
            data: vec![7; n],
        }
    }

    #[test]
    fn an_image_goes_where_its_type_is_taken_and_a_stand_in_elsewhere() {
        let parts = [
            image("image/png", 12_000),
            image("image/bmp", 10),
            Content::Audio {
                media_type: "audio/wav".into(),
                data: vec![0; 2_500_000],
            },
        ];
        let rendered = render(&parts, MediaRules::ANTHROPIC);
        assert!(matches!(
            rendered[0],
            Part::Image {
                media_type: "image/png",
                ..
            }
        ));
        assert_eq!(
            rendered[1],
            Part::Text(
                "[image/bmp, 10 bytes, not shown: this API takes image/jpeg, image/png, \
                 image/gif, image/webp only]"
                    .into()
            )
        );
        assert_eq!(
            rendered[2],
            Part::Text(
                "[audio/wav, 2.5 MB, not shown: this API takes no audio in tool results]".into()
            )
        );
    }

    #[test]
    fn refusals_of_image_input_are_told_from_other_errors() {
        let error = |status: u16, message: &str| LlmError::Status {
            provider: "p".into(),
            status,
            message: message.into(),
        };
        for (status, message) in [
            (
                500,
                "server_error: image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
            ),
            (
                400,
                "Model does not support images. Please use a model that does.",
            ),
            (
                400,
                "invalid_request_error: Invalid content type. image_url is only supported by certain models.",
            ),
            (400, "qwen2.5 is not a multimodal model"),
        ] {
            assert!(refuses_images(&error(status, message)), "{message}");
        }
        for (status, message) in [
            (500, "server_error: The server had an error"),
            (
                400,
                "Invalid 'input[3].output[0].image_url': the image is not valid base64.",
            ),
            (429, "rate limited"),
        ] {
            assert!(!refuses_images(&error(status, message)), "{message}");
        }
        assert!(!refuses_images(&LlmError::InvalidResponse {
            provider: "p".into(),
            message: "image input is not supported".into(),
        }));
    }

    #[test]
    fn a_text_only_format_gets_the_text_and_a_stand_in_per_part() {
        let parts = [image("image/png", 12_000)];
        assert_eq!(
            text_only("{\"n\":1}", &parts, MediaRules::CHAT),
            "{\"n\":1}\n[image/png, 12 KB, not shown: this API takes text only in tool results]"
        );
        assert!(matches!(
            text_only("plain", &[], MediaRules::CHAT),
            Cow::Borrowed("plain")
        ));
    }
}
