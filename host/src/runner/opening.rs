//! A run's opening messages from what the registry offers
//! ([`Offers`]): a prompt's messages, and a resource's content attached
//! as a user message.
//!
//! A prompt message becomes one neutral [`Message`]: a user's text as a
//! user message, an image or audio as a user message with that part (each
//! wire format sends an image it takes as an image and a stand-in naming
//! the type and size for the rest, as for tool results), an embedded
//! resource as its text under a line naming its URI (bytes of a `text/*`
//! type that are UTF-8 as text too; an image blob as an image; other
//! bytes as a short note: a model cannot read them). An
//! assistant's message keeps its text; anything else in it becomes a
//! note, since no API takes media in the model's own turn.
//!
//! An attached resource is read through [`Offers::read`], within its
//! budgets; text goes as text under a line naming its URI, an image as an
//! image part; other bytes are refused ([`OpeningError::NotAttachable`]).
//!
//! ```
//! # async fn f(registry: &toolhost::tools::ToolRegistry) -> Result<(), toolhost::runner::OpeningError> {
//! use std::collections::BTreeMap;
//! use toolhost::runner::{attach_resource, prompt_messages, Transcript};
//!
//! let offers = registry.offers();
//! let args = BTreeMap::from([("city".to_owned(), "Warsaw".to_owned())]);
//! let mut start = prompt_messages(offers, "everything_args-prompt", args).await?;
//! start.push(attach_resource(offers, "demo://resource/static/document/architecture.md").await?);
//! let transcript = Transcript::new(start); // ToolRunner::resume(provider, registry, config, transcript)
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::llm::media::stand_in;
use crate::llm::{AssistantMessage, Message};
use crate::tools::{
    Content, OfferError, Offers, PromptEntry, PromptMessage, PromptReply, PromptRole,
    ResourceContents, ResourcePart,
};

/// Why a prompt or resource could not open a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpeningError {
    /// No prompt has this name.
    #[error("no prompt is named `{name}`; {known}")]
    UnknownPrompt {
        /// The name asked for (cut and escaped).
        name: String,
        /// The prompts there are, as a sentence that says what to do.
        known: String,
    },
    /// A required argument was not given.
    #[error(
        "prompt `{prompt}` needs argument `{argument}`: give it as {argument}=VALUE ({arguments})"
    )]
    MissingArgument {
        /// The prompt.
        prompt: String,
        /// The argument missing.
        argument: String,
        /// The prompt's arguments, as a sentence.
        arguments: String,
    },
    /// An argument the prompt does not have: most likely a typo.
    #[error("prompt `{prompt}` has no argument `{argument}` ({arguments})")]
    UnknownArgument {
        /// The prompt.
        prompt: String,
        /// The argument given (cut and escaped).
        argument: String,
        /// The prompt's arguments, as a sentence.
        arguments: String,
    },
    /// No resource has this URI and no template matches it.
    #[error(
        "no resource has URI `{uri}` and no resource template matches it: list them \
         (`toolhost resources`, `Offers::resources` and `Offers::templates`) and use one of their URIs"
    )]
    UnknownResource {
        /// The URI (cut and escaped).
        uri: String,
    },
    /// The resource holds bytes other than an image.
    #[error(
        "resource `{uri}` is {what}: only text and images can be given to a model; \
         save it to a file instead (`toolhost read URI --out FILE`)"
    )]
    NotAttachable {
        /// The URI of the part.
        uri: String,
        /// Its type and size.
        what: String,
    },
    /// The source failed, took too long or went over a budget.
    #[error("{0}")]
    Offer(OfferError),
}

impl From<OfferError> for OpeningError {
    fn from(error: OfferError) -> Self {
        match error {
            OfferError::UnknownResource { uri } => Self::UnknownResource { uri },
            other => Self::Offer(other),
        }
    }
}

/// The prompt `name` of `offers`, rendered with `args`, as the opening
/// messages of a run ([`messages_of_prompt`]).
///
/// # Errors
///
/// The prompt is unknown, a required argument is missing or one it does
/// not have is given; the source failed, took too long or returned more
/// than its budget.
pub async fn prompt_messages(
    offers: &Offers,
    name: &str,
    args: BTreeMap<String, String>,
) -> Result<Vec<Message>, OpeningError> {
    let prompts = offers.prompts();
    let entry = prompts
        .iter()
        .find(|e| e.spec.name == name)
        .ok_or_else(|| unknown_prompt(name, &prompts))?;
    check_arguments(entry, &args)?;
    let reply = offers.get_prompt(name, args).await.map_err(|e| match e {
        OfferError::UnknownPrompt { .. } => unknown_prompt(name, &offers.prompts()),
        other => other.into(),
    })?;
    Ok(messages_of_prompt(&reply))
}

/// The resource `uri` of `offers`, read within its budgets, as one user
/// message to attach to a run ([`message_of_resource`]).
///
/// # Errors
///
/// Nothing has the URI; the source failed, took too long or returned more
/// than its budget; a part is bytes other than an image.
pub async fn attach_resource(offers: &Offers, uri: &str) -> Result<Message, OpeningError> {
    let parts = offers.read(uri).await?;
    message_of_resource(&parts)
}

/// A prompt's messages as neutral messages, one for one.
pub fn messages_of_prompt(reply: &PromptReply) -> Vec<Message> {
    reply.messages.iter().map(message_of_prompt).collect()
}

/// One prompt message as a neutral message.
fn message_of_prompt(message: &PromptMessage) -> Message {
    match (message.role, &message.content) {
        (PromptRole::User, Content::Text { text }) => Message::user(text.clone()),
        (PromptRole::User, part @ (Content::Image { .. } | Content::Audio { .. })) => {
            Message::user_with_parts("", vec![part.clone()])
        }
        (
            PromptRole::User,
            Content::Resource {
                uri,
                media_type,
                contents,
            },
        ) => match embedded(uri, media_type.as_deref(), contents) {
            Embedded::Text(text) => Message::user(text),
            Embedded::Image(heading, image) => Message::user_with_parts(heading, vec![image]),
            Embedded::Bytes(note) => Message::user(note),
        },
        (PromptRole::Assistant, content) => Message::Assistant(AssistantMessage {
            content: assistant_text(content),
            ..AssistantMessage::default()
        }),
    }
}

/// The text of an assistant's prompt message: its text, an embedded text
/// resource under its heading, or a note for media.
fn assistant_text(content: &Content) -> String {
    const WHY: &str = "the model's own turn takes text only";
    match content {
        Content::Text { text } => text.clone(),
        Content::Image { media_type, data } | Content::Audio { media_type, data } => {
            stand_in(media_type, data.len(), WHY)
        }
        Content::Resource {
            uri,
            media_type,
            contents,
        } => match embedded(uri, media_type.as_deref(), contents) {
            Embedded::Text(text) | Embedded::Bytes(text) => text,
            Embedded::Image(heading, image) => {
                format!("{heading}\n{}", stand_in_of(&image, WHY))
            }
        },
    }
}

fn stand_in_of(part: &Content, why: &str) -> String {
    match part {
        Content::Image { media_type, data } | Content::Audio { media_type, data } => {
            stand_in(media_type, data.len(), why)
        }
        other => other.stand_in().to_string(),
    }
}

/// A resource's parts as one user message: each text under a line naming
/// its URI; each image as an image part, named in the text.
///
/// # Errors
///
/// [`OpeningError::NotAttachable`] for a part of bytes other than an image.
pub fn message_of_resource(parts: &[ResourcePart]) -> Result<Message, OpeningError> {
    let mut text = String::new();
    let mut media = Vec::new();
    for part in parts {
        let piece = match embedded(&part.uri, part.mime_type.as_deref(), &part.contents) {
            Embedded::Text(piece) => piece,
            Embedded::Image(heading, image) => {
                media.push(image);
                heading
            }
            Embedded::Bytes(_) => {
                return Err(OpeningError::NotAttachable {
                    uri: crate::text::untrusted(&part.uri, 256),
                    what: describe_bytes(part.mime_type.as_deref(), part_len(part)),
                });
            }
        };
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&piece);
    }
    Ok(Message::user_with_parts(text, media))
}

/// An embedded or read resource, as a message can carry it.
enum Embedded {
    /// Its text under its heading.
    Text(String),
    /// An image: its heading, and the image part.
    Image(String, Content),
    /// Bytes a model cannot read: a note naming them.
    Bytes(String),
}

fn embedded(uri: &str, media_type: Option<&str>, contents: &ResourceContents) -> Embedded {
    let uri = crate::text::untrusted(uri, 256);
    let mut heading = format!("Resource `{uri}`");
    if let Some(media_type) = media_type {
        let _ = write!(heading, " ({})", crate::text::untrusted(media_type, 80));
    }
    let data = match contents {
        ResourceContents::Text(text) => return Embedded::Text(format!("{heading}:\n{text}")),
        ResourceContents::Blob(data) => data,
    };
    // Bytes that say they are text, and are: as text.
    if media_type.is_some_and(|m| m.starts_with("text/"))
        && let Ok(text) = std::str::from_utf8(data)
    {
        return Embedded::Text(format!("{heading}:\n{text}"));
    }
    match media_type {
        Some(image) if image.starts_with("image/") => Embedded::Image(
            format!("{heading}:"),
            Content::Image {
                media_type: image.to_owned(),
                data: data.clone(),
            },
        ),
        _ => Embedded::Bytes(format!(
            "[Resource `{uri}`: {}, not shown: a model cannot read it]",
            describe_bytes(media_type, data.len())
        )),
    }
}

fn describe_bytes(media_type: Option<&str>, bytes: usize) -> String {
    format!(
        "{} of {bytes} bytes",
        media_type.map_or_else(
            || "binary data".to_owned(),
            |m| crate::text::untrusted(m, 80)
        )
    )
}

fn part_len(part: &ResourcePart) -> usize {
    match &part.contents {
        ResourceContents::Text(t) => t.len(),
        ResourceContents::Blob(b) => b.len(),
    }
}

fn unknown_prompt(name: &str, prompts: &[PromptEntry]) -> OpeningError {
    let known = if prompts.is_empty() {
        "no source offers any prompt (an `[[mcp]]` server that has some, or the program's own)"
            .to_owned()
    } else {
        let names: Vec<&str> = prompts.iter().map(|e| e.spec.name.as_str()).collect();
        format!(
            "the prompts are: {} (`toolhost prompt` lists them)",
            crate::text::untrusted(&names.join(", "), 1024)
        )
    };
    OpeningError::UnknownPrompt {
        name: crate::text::untrusted(name, 80),
        known,
    }
}

/// Every required argument given, and none the prompt does not have.
fn check_arguments(
    entry: &PromptEntry,
    args: &BTreeMap<String, String>,
) -> Result<(), OpeningError> {
    let spec = &entry.spec;
    let arguments = || {
        if spec.arguments.is_empty() {
            return "it takes none".to_owned();
        }
        let list: Vec<String> = spec
            .arguments
            .iter()
            .map(|a| {
                let name = crate::text::untrusted(&a.name, 80);
                if a.required {
                    format!("{name} (required)")
                } else {
                    name
                }
            })
            .collect();
        format!("its arguments: {}", list.join(", "))
    };
    if let Some(missing) = spec
        .arguments
        .iter()
        .find(|a| a.required && !args.contains_key(&a.name))
    {
        return Err(OpeningError::MissingArgument {
            prompt: spec.name.clone(),
            argument: crate::text::untrusted(&missing.name, 80),
            arguments: arguments(),
        });
    }
    if let Some(extra) = args
        .keys()
        .find(|k| !spec.arguments.iter().any(|a| &a.name == *k))
    {
        return Err(OpeningError::UnknownArgument {
            prompt: spec.name.clone(),
            argument: crate::text::untrusted(extra, 80),
            arguments: arguments(),
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "opening_tests.rs"]
mod tests;
