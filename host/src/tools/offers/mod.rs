//! What sources offer besides tools: MCP resources (by URI), resource
//! templates (RFC 6570 level 1, `{var}`), prompts (with arguments) and
//! completions of a prompt's argument or a template's variable.
//!
//! The registry holds them in [`Offers`] ([`ToolRegistry::offers`]),
//! each with its owner: the program's own (native) ones, and those of
//! `[[mcp]]` servers, which keep their URIs and whose prompts get the
//! server's prefix as its tools do. What a source offers and returns is
//! held to an [`OfferBudget`]. See `docs/resources.md`.
//!
//! [`ToolRegistry::offers`]: super::ToolRegistry::offers

mod budget;
mod store;
mod template;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;

pub use budget::OfferBudget;
pub use store::Offers;
pub(crate) use template::UriTemplate;

use super::{Content, ResourceContents, ToolOrigin};

/// A resource a source offers: a URI and what a client lists it by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceSpec {
    /// Its URI, with a scheme (`memo://notes/today`).
    pub uri: String,
    /// A short name.
    pub name: String,
    /// What it holds, for a person or a model.
    pub description: Option<String>,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
}

impl ResourceSpec {
    /// A resource `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        }
    }

    /// With a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With a MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A resource template: a URI template (`memo://notes/{day}`) whose
/// variables a client fills in; the registry keeps it by its template.
pub type TemplateSpec = ResourceSpec;

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptArg {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Whether `prompts/get` must have it.
    pub required: bool,
}

impl PromptArg {
    /// An argument a prompt must be given.
    pub fn required(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            required: true,
        }
    }

    /// An argument a prompt may be given.
    pub fn optional(name: impl Into<String>) -> Self {
        Self {
            required: false,
            ..Self::required(name)
        }
    }

    /// With a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A prompt a source offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptSpec {
    /// Its name (1 to 64 characters of `a-z A-Z 0-9 _ -`, as a tool's).
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Its arguments.
    pub arguments: Vec<PromptArg>,
}

impl PromptSpec {
    /// A prompt `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            arguments: Vec::new(),
        }
    }

    /// With a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With one more argument.
    #[must_use]
    pub fn with_argument(mut self, argument: PromptArg) -> Self {
        self.arguments.push(argument);
        self
    }
}

/// One part of what a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePart {
    /// The URI of what it holds (the URI read, or one under it).
    pub uri: String,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Text or bytes.
    pub contents: ResourceContents,
}

impl ResourcePart {
    fn size(&self) -> usize {
        match &self.contents {
            ResourceContents::Text(t) => t.len(),
            ResourceContents::Blob(b) => b.len(),
        }
    }
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt: text, an image, audio or an embedded
/// resource ([`Content`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: PromptRole,
    /// What it says.
    pub content: Content,
}

impl PromptMessage {
    /// A user's text message.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: PromptRole::User,
            content: Content::Text { text: text.into() },
        }
    }
}

/// What `prompts/get` answers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PromptReply {
    /// A description of this rendering of the prompt.
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl From<Vec<PromptMessage>> for PromptReply {
    fn from(messages: Vec<PromptMessage>) -> Self {
        Self {
            description: None,
            messages,
        }
    }
}

/// What a completion is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompletionRef {
    /// An argument of the prompt of this (registry) name.
    Prompt(String),
    /// A variable of the resource template with this URI template.
    Template(String),
}

/// A request for completions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompletionRequest {
    /// The argument (or variable) being filled in.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// The arguments filled in already.
    pub context: BTreeMap<String, String>,
}

/// Completion values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    /// The values, best first.
    pub values: Vec<String>,
    /// How many there are in all, when known.
    pub total: Option<u32>,
    /// Whether there are more than `values`.
    pub has_more: bool,
}

/// A read: the URI asked for and, for a template, its variables.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadRequest {
    /// The URI.
    pub uri: String,
    /// The template's variables (empty for a listed resource).
    pub vars: BTreeMap<String, String>,
}

/// Why a resource, prompt or completion could not be offered or served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OfferError {
    /// No resource has this URI and no template matches it.
    #[error(
        "no resource has URI `{uri}`: list them with `resources/list` and `resources/templates/list`"
    )]
    UnknownResource {
        /// The URI.
        uri: String,
    },
    /// No prompt has this name.
    #[error("no prompt is named `{name}`: list them with `prompts/list`")]
    UnknownPrompt {
        /// The name.
        name: String,
    },
    /// A required argument of a prompt is missing.
    #[error("prompt `{prompt}` needs argument `{argument}`")]
    MissingArgument {
        /// The prompt.
        prompt: String,
        /// The argument.
        argument: String,
    },
    /// A URI (or template) breaks the rules.
    #[error("URI `{uri}` is refused: {why}")]
    InvalidUri {
        /// The URI, cut and escaped.
        uri: String,
        /// Which rule.
        why: String,
    },
    /// A name, template or argument is not valid.
    #[error("{what} is not valid: {why}")]
    Invalid {
        /// What.
        what: String,
        /// Why, and what to do.
        why: String,
    },
    /// Another source owns the URI or name.
    #[error("{what} is taken by {owner}; rename one of them")]
    Taken {
        /// The resource, template or prompt.
        what: String,
        /// Its owner.
        owner: String,
    },
    /// What a source offers or returns is over a budget.
    #[error("{what} is over the budget of {limit}")]
    OverBudget {
        /// What.
        what: String,
        /// The budget.
        limit: String,
    },
    /// The source took longer than the budget allows.
    #[error("{what} took longer than {ms} ms")]
    Timeout {
        /// What.
        what: String,
        /// The budget, in ms.
        ms: u128,
    },
    /// The source failed to answer.
    #[error("{0}")]
    Failed(String),
}

/// How a resource or template is read.
pub type ReadFn = Arc<
    dyn Fn(ReadRequest) -> BoxFuture<'static, Result<Vec<ResourcePart>, OfferError>> + Send + Sync,
>;
/// How a prompt is rendered from its arguments.
pub type GetFn = Arc<
    dyn Fn(BTreeMap<String, String>) -> BoxFuture<'static, Result<PromptReply, OfferError>>
        + Send
        + Sync,
>;
/// How an argument or variable is completed.
pub type CompleteFn = Arc<
    dyn Fn(CompletionRequest) -> BoxFuture<'static, Result<Completion, OfferError>> + Send + Sync,
>;

/// A [`ReadFn`] from an async function.
pub fn read_fn<F, Fut>(f: F) -> ReadFn
where
    F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourcePart>, OfferError>> + Send + 'static,
{
    Arc::new(move |request| f(request).boxed())
}

/// A [`GetFn`] from an async function.
pub fn get_fn<F, Fut>(f: F) -> GetFn
where
    F: Fn(BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<PromptReply, OfferError>> + Send + 'static,
{
    Arc::new(move |args| f(args).boxed())
}

/// A [`CompleteFn`] from an async function.
pub fn complete_fn<F, Fut>(f: F) -> CompleteFn
where
    F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completion, OfferError>> + Send + 'static,
{
    Arc::new(move |request| f(request).boxed())
}

/// A listed resource and where it comes from.
#[derive(Clone)]
pub struct ResourceEntry {
    /// What a client lists.
    pub spec: ResourceSpec,
    /// Who offers it.
    pub owner: ToolOrigin,
    read: ReadFn,
}

/// A template and where it comes from.
#[derive(Clone)]
pub struct TemplateEntry {
    /// What a client lists (`uri` is the URI template).
    pub spec: TemplateSpec,
    /// Who offers it.
    pub owner: ToolOrigin,
    template: UriTemplate,
    read: ReadFn,
    complete: Option<CompleteFn>,
}

/// A prompt and where it comes from.
#[derive(Clone)]
pub struct PromptEntry {
    /// What a client lists (`name` is the registry name).
    pub spec: PromptSpec,
    /// Who offers it.
    pub owner: ToolOrigin,
    get: GetFn,
    complete: Option<CompleteFn>,
}

/// Tells a source that a client (un)subscribed to one of its URIs:
/// `true` to subscribe.
pub type SubscribeFn =
    Arc<dyn Fn(String, bool) -> BoxFuture<'static, Result<(), OfferError>> + Send + Sync>;

impl ResourceEntry {
    /// An entry of `owner`'s, read by `read`.
    pub fn new(spec: ResourceSpec, owner: ToolOrigin, read: ReadFn) -> Self {
        Self { spec, owner, read }
    }
}

impl TemplateEntry {
    /// An entry of `owner`'s, read by `read`, its variables completed by
    /// `complete`.
    ///
    /// # Errors
    ///
    /// The URI template is not RFC 6570 level 1.
    pub fn new(
        spec: TemplateSpec,
        owner: ToolOrigin,
        read: ReadFn,
        complete: Option<CompleteFn>,
    ) -> Result<Self, OfferError> {
        let template = UriTemplate::parse(&spec.uri).map_err(|why| OfferError::Invalid {
            what: format!("URI template `{}`", crate::text::untrusted(&spec.uri, 256)),
            why,
        })?;
        Ok(Self {
            spec,
            owner,
            template,
            read,
            complete,
        })
    }
}

impl PromptEntry {
    /// An entry of `owner`'s, rendered by `get`, its arguments completed
    /// by `complete`.
    pub fn new(
        spec: PromptSpec,
        owner: ToolOrigin,
        get: GetFn,
        complete: Option<CompleteFn>,
    ) -> Self {
        Self {
            spec,
            owner,
            get,
            complete,
        }
    }
}

macro_rules! debug_entry {
    ($($entry:ty),*) => {$(
        impl std::fmt::Debug for $entry {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($entry))
                    .field("spec", &self.spec)
                    .field("owner", &self.owner)
                    .finish_non_exhaustive()
            }
        }
    )*};
}
debug_entry!(ResourceEntry, TemplateEntry, PromptEntry);
