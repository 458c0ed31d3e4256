//! What a plugin offers besides tools (contract 0.3): resources, resource
//! templates, prompts and completions.
//!
//! Implement [`Offers`] on a type of your own, overriding what you offer
//! (every method has a default that offers nothing), and name the type in
//! [`export_offers!`](crate::export_offers) beside [`export_tools!`](crate::export_tools):
//!
//! ```
//! use toolhost_guest::offers::{Arguments, OfferError, Offers, Resource, ResourcePart};
//!
//! struct Notes;
//!
//! impl Offers for Notes {
//!     fn resources() -> Vec<Resource> {
//!         vec![Resource::new("notes://today", "today").mime_type("text/plain")]
//!     }
//!
//!     fn read(uri: &str, _vars: &Arguments) -> Result<Vec<ResourcePart>, OfferError> {
//!         match uri {
//!             "notes://today" => Ok(vec![ResourcePart::text(uri, "Buy milk.")]),
//!             _ => Err(OfferError::not_found(uri)),
//!         }
//!     }
//! }
//!
//! toolhost_guest::export_offers!(Notes);
//! # fn main() {}
//! ```
//!
//! The host lists resources, templates and prompts once, when the plugin
//! loads (so, like `describe`, the lists must not depend on input or
//! state); every read, prompt and completion is a call of its own, under the
//! plugin's limits. A resource's URI must have a scheme the host gives the
//! plugin: its name (`_` as `-`) or one its manifest lists in
//! `resource_schemes`.

use std::collections::BTreeMap;

use crate::bindings_offers::exports::toolhost::plugin::completions::Target as WitTarget;
use crate::bindings_offers::toolhost::plugin::offer_types as wit;
pub use crate::output::ResourceContents;

/// A prompt's arguments, or a template's variables, by name.
pub type Arguments = BTreeMap<String, String>;

/// A listed resource, or a resource template (its `uri` an RFC 6570 level 1
/// template: `notes://{day}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub uri: String,
    pub name: String,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

impl Resource {
    /// A resource (or template) `uri` named `name`.
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
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With a MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// One part of what a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePart {
    pub uri: String,
    pub mime_type: Option<String>,
    pub contents: ResourceContents,
}

impl ResourcePart {
    /// Text at `uri`, `text/plain`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some("text/plain".into()),
            contents: ResourceContents::Text(text.into()),
        }
    }

    /// Bytes at `uri`, of MIME type `mime_type`.
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            contents: ResourceContents::Blob(data),
        }
    }
}

/// A prompt and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// 1 to 64 characters of `a-z A-Z 0-9 _ -`, as a tool's name.
    pub name: String,
    pub description: Option<String>,
    /// Name, description, whether required.
    pub arguments: Vec<(String, Option<String>, bool)>,
}

impl Prompt {
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
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With one more argument, `required` or not.
    #[must_use]
    pub fn argument(mut self, name: impl Into<String>, description: &str, required: bool) -> Self {
        self.arguments
            .push((name.into(), Some(description.to_owned()), required));
        self
    }
}

/// Who speaks a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One message of a rendered prompt: text, an image, audio or an embedded
/// resource ([`Content`](crate::Content)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: crate::Content,
}

impl Message {
    /// A user's message.
    pub fn user(content: crate::Content) -> Self {
        Self {
            role: Role::User,
            content,
        }
    }

    /// The assistant's message.
    pub fn assistant(content: crate::Content) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }
}

/// What completing an argument answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// The values, best first.
    pub values: Vec<String>,
    /// How many there are in all, when known.
    pub total: Option<u32>,
    /// Whether there are more than `values`.
    pub has_more: bool,
}

impl Completion {
    /// These values, all there are.
    pub fn of(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        Self {
            total: u32::try_from(values.len()).ok(),
            values,
            has_more: false,
        }
    }
}

/// What is being completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An argument of the prompt of this name.
    Prompt(String),
    /// A variable of the template with this URI template.
    Template(String),
}

/// A read, prompt or completion that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfferError {
    /// No such resource, prompt or argument.
    NotFound(String),
    /// The arguments or URI make no sense.
    InvalidInput(String),
    /// It could not do its job.
    Failed(String),
}

impl OfferError {
    /// Nothing has `what`.
    pub fn not_found(what: impl std::fmt::Display) -> Self {
        Self::NotFound(format!("nothing here is `{what}`"))
    }
}

/// What a plugin offers besides tools. Every method has a default that
/// offers nothing: override those you need.
pub trait Offers {
    /// The resources, listed when the plugin loads.
    fn resources() -> Vec<Resource> {
        Vec::new()
    }

    /// The resource templates, listed when the plugin loads.
    fn templates() -> Vec<Resource> {
        Vec::new()
    }

    /// Read `uri`: a listed resource (`vars` empty) or a URI a template
    /// matches (`vars` its variables).
    fn read(uri: &str, vars: &Arguments) -> Result<Vec<ResourcePart>, OfferError> {
        let _ = vars;
        Err(OfferError::not_found(uri))
    }

    /// The prompts, listed when the plugin loads.
    fn prompts() -> Vec<Prompt> {
        Vec::new()
    }

    /// Render prompt `name` with `arguments` (the host checked that the
    /// required ones are there).
    fn prompt(name: &str, arguments: &Arguments) -> Result<Vec<Message>, OfferError> {
        let _ = arguments;
        Err(OfferError::not_found(name))
    }

    /// Values for `argument` of `target` that fit `value`, what the user
    /// typed so far; `context` holds the arguments filled in already.
    fn complete(
        target: &Target,
        argument: &str,
        value: &str,
        context: &Arguments,
    ) -> Result<Completion, OfferError> {
        let _ = (target, argument, value, context);
        Ok(Completion::default())
    }
}

// What `export_offers!` calls: the trait's answers in the contract's types.

fn wit_error(e: OfferError) -> wit::OfferError {
    match e {
        OfferError::NotFound(m) => wit::OfferError::NotFound(m),
        OfferError::InvalidInput(m) => wit::OfferError::InvalidInput(m),
        OfferError::Failed(m) => wit::OfferError::Failed(m),
    }
}

fn arguments(pairs: Vec<(String, String)>) -> Arguments {
    pairs.into_iter().collect()
}

fn wit_contents(c: ResourceContents) -> wit::Contents {
    match c {
        ResourceContents::Text(t) => wit::Contents::Text(t),
        ResourceContents::Blob(b) => wit::Contents::Blob(b),
    }
}

fn wit_part(p: ResourcePart) -> wit::ResourcePart {
    wit::ResourcePart {
        uri: p.uri,
        mime_type: p.mime_type,
        contents: wit_contents(p.contents),
    }
}

#[doc(hidden)]
pub fn list_resources<T: Offers>() -> Vec<wit::ResourceInfo> {
    T::resources()
        .into_iter()
        .map(|r| wit::ResourceInfo {
            uri: r.uri,
            name: r.name,
            description: r.description,
            mime_type: r.mime_type,
            meta: None,
        })
        .collect()
}

#[doc(hidden)]
pub fn list_templates<T: Offers>() -> Vec<wit::TemplateInfo> {
    T::templates()
        .into_iter()
        .map(|r| wit::TemplateInfo {
            uri: r.uri,
            name: r.name,
            description: r.description,
            mime_type: r.mime_type,
            meta: None,
        })
        .collect()
}

#[doc(hidden)]
pub fn read<T: Offers>(
    uri: String,
    vars: Vec<(String, String)>,
) -> Result<Vec<wit::ResourcePart>, wit::OfferError> {
    T::read(&uri, &arguments(vars))
        .map(|parts| parts.into_iter().map(wit_part).collect())
        .map_err(wit_error)
}

#[doc(hidden)]
pub fn list_prompts<T: Offers>() -> Vec<wit::PromptInfo> {
    T::prompts()
        .into_iter()
        .map(|p| wit::PromptInfo {
            name: p.name,
            description: p.description,
            arguments: p
                .arguments
                .into_iter()
                .map(|(name, description, required)| wit::PromptArgument {
                    name,
                    description,
                    required,
                })
                .collect(),
            meta: None,
        })
        .collect()
}

#[doc(hidden)]
pub fn get<T: Offers>(
    name: String,
    args: Vec<(String, String)>,
) -> Result<wit::PromptReply, wit::OfferError> {
    let messages = T::prompt(&name, &arguments(args)).map_err(wit_error)?;
    Ok(wit::PromptReply {
        description: None,
        messages: messages
            .into_iter()
            .map(|m| wit::Message {
                role: match m.role {
                    Role::User => wit::Role::User,
                    Role::Assistant => wit::Role::Assistant,
                },
                content: match m.content {
                    crate::Content::Text(t) => wit::Part::Text(t),
                    crate::Content::Image { media_type, data } => {
                        wit::Part::Image(wit::Media { media_type, data })
                    }
                    crate::Content::Audio { media_type, data } => {
                        wit::Part::Audio(wit::Media { media_type, data })
                    }
                    crate::Content::Resource {
                        uri,
                        media_type,
                        contents,
                    } => wit::Part::Resource(wit::ResourcePart {
                        uri,
                        mime_type: media_type,
                        contents: wit_contents(contents),
                    }),
                },
            })
            .collect(),
    })
}

#[doc(hidden)]
pub fn complete<T: Offers>(
    target: WitTarget,
    argument: String,
    value: String,
    context: Vec<(String, String)>,
) -> Result<wit::Completion, wit::OfferError> {
    let target = match target {
        WitTarget::Prompt(name) => Target::Prompt(name),
        WitTarget::Template(uri) => Target::Template(uri),
    };
    T::complete(&target, &argument, &value, &arguments(context))
        .map(|c| wit::Completion {
            values: c.values,
            total: c.total,
            has_more: c.has_more,
        })
        .map_err(wit_error)
}

/// Export `$offers`, a type that implements [`Offers`], as the plugin's
/// resources, prompts and completions (contract 0.3). Use it once, beside
/// [`export_tools!`](crate::export_tools) (a plugin still has tools).
#[macro_export]
macro_rules! export_offers {
    ($offers:ty) => {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        struct export_offers_may_appear_once_per_crate;

        impl $crate::__private::offers::ResourcesGuest for export_offers_may_appear_once_per_crate {
            fn list_resources() -> ::std::vec::Vec<$crate::__private::offers::ResourceInfo> {
                $crate::offers::list_resources::<$offers>()
            }
            fn list_templates() -> ::std::vec::Vec<$crate::__private::offers::TemplateInfo> {
                $crate::offers::list_templates::<$offers>()
            }
            fn read(
                uri: ::std::string::String,
                vars: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<
                ::std::vec::Vec<$crate::__private::offers::WitResourcePart>,
                $crate::__private::offers::WitOfferError,
            > {
                $crate::offers::read::<$offers>(uri, vars)
            }
        }

        impl $crate::__private::offers::PromptsGuest for export_offers_may_appear_once_per_crate {
            fn list_prompts() -> ::std::vec::Vec<$crate::__private::offers::PromptInfo> {
                $crate::offers::list_prompts::<$offers>()
            }
            fn get(
                name: ::std::string::String,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<
                $crate::__private::offers::PromptReply,
                $crate::__private::offers::WitOfferError,
            > {
                $crate::offers::get::<$offers>(name, arguments)
            }
        }

        impl $crate::__private::offers::CompletionsGuest for export_offers_may_appear_once_per_crate {
            fn complete(
                target: $crate::__private::offers::Target,
                argument: ::std::string::String,
                value: ::std::string::String,
                context: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<
                $crate::__private::offers::WitCompletion,
                $crate::__private::offers::WitOfferError,
            > {
                $crate::offers::complete::<$offers>(target, argument, value, context)
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::__private::bindings_offers::export_offers_world!(
            export_offers_may_appear_once_per_crate
                with_types_in $crate::__private::bindings_offers
        );
        #[cfg(not(target_arch = "wasm32"))]
        const _: () = {
            let _ = <export_offers_may_appear_once_per_crate as $crate::__private::offers::ResourcesGuest>::read;
            let _ = <export_offers_may_appear_once_per_crate as $crate::__private::offers::PromptsGuest>::get;
            let _ = <export_offers_may_appear_once_per_crate as $crate::__private::offers::CompletionsGuest>::complete;
        };
    };
}
