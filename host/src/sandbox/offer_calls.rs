//! Host bindings for what contract 0.3 adds (`wit/0.3/plugin.wit`): the
//! `resources`, `prompts` and `completions` interfaces a 0.2 plugin may
//! export besides `tool`. Each is optional: which ones a component exports
//! is read when it is linked ([`OfferIndices::new`]), and a component that
//! exports none of them costs nothing here (no lookups on its instances).
//!
//! What a plugin answers is converted at once into the registry's own
//! types (`tools::offers`), so the rest of the host sees one shape for the
//! program's, an `[[mcp]]` server's and a plugin's offers.

use std::collections::BTreeMap;

use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::state::StoreState;
use crate::tools::{
    Completion, CompletionRef, Content, PromptArg, PromptMessage, PromptReply, PromptRole,
    PromptSpec, ResourceContents, ResourcePart, ResourceSpec, TemplateSpec,
};

mod v3 {
    wasmtime::component::bindgen!({
        path: "../wit/0.3/plugin.wit",
        world: "offers",
        exports: { default: async },
    });
}

use self::v3::exports::toolhost::plugin::{completions, prompts, resources};
use self::v3::toolhost::plugin::offer_types as wit;

pub(crate) use self::v3::toolhost::plugin::offer_types::Host as OfferTypesHost;

/// The names of the interfaces of contract 0.3 a component may export.
pub(crate) const RESOURCES: &str = "toolhost:plugin/resources@0.3.0";
pub(crate) const PROMPTS: &str = "toolhost:plugin/prompts@0.3.0";
pub(crate) const COMPLETIONS: &str = "toolhost:plugin/completions@0.3.0";

/// Link the types 0.3's interfaces share (a component that uses them
/// imports them, as it does 0.2's `types`).
pub(crate) fn link(linker: &mut wasmtime::component::Linker<StoreState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    wit::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
}

/// Where a component's 0.3 exports are, for those it has.
#[derive(Clone, Default)]
pub(crate) struct OfferIndices {
    resources: Option<resources::GuestIndices>,
    prompts: Option<prompts::GuestIndices>,
    completions: Option<completions::GuestIndices>,
}

impl OfferIndices {
    /// The 0.3 interfaces `pre`'s component exports, checked against the
    /// contract.
    pub(crate) fn new(pre: &InstancePre<StoreState>) -> wasmtime::Result<Self> {
        let component = pre.component();
        let has = |name: &str| component.get_export_index(None, name).is_some();
        Ok(Self {
            resources: has(RESOURCES)
                .then(|| resources::GuestIndices::new(pre))
                .transpose()?,
            prompts: has(PROMPTS)
                .then(|| prompts::GuestIndices::new(pre))
                .transpose()?,
            completions: has(COMPLETIONS)
                .then(|| completions::GuestIndices::new(pre))
                .transpose()?,
        })
    }

    /// Whether the component exports any of them.
    pub(crate) fn any(&self) -> bool {
        self.resources.is_some() || self.prompts.is_some() || self.completions.is_some()
    }

    /// The exports of `instance`, loaded.
    pub(crate) fn load(
        &self,
        store: &mut Store<StoreState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<OfferExports> {
        Ok(OfferExports {
            resources: self
                .resources
                .as_ref()
                .map(|i| i.load(&mut *store, instance))
                .transpose()?,
            prompts: self
                .prompts
                .as_ref()
                .map(|i| i.load(&mut *store, instance))
                .transpose()?,
            completions: self
                .completions
                .as_ref()
                .map(|i| i.load(&mut *store, instance))
                .transpose()?,
        })
    }
}

/// An instance's 0.3 exports.
#[derive(Default)]
pub(crate) struct OfferExports {
    resources: Option<resources::Guest>,
    prompts: Option<prompts::Guest>,
    completions: Option<completions::Guest>,
}

/// One request to a plugin's 0.3 exports.
#[derive(Debug, Clone)]
pub(crate) enum OfferCall {
    /// Its resources, templates and prompts, each list from the interface
    /// that has it (empty where it exports none).
    Lists,
    /// Read a URI (with a template's variables).
    Read {
        uri: String,
        vars: BTreeMap<String, String>,
    },
    /// Render a prompt.
    Get {
        name: String,
        arguments: BTreeMap<String, String>,
    },
    /// Complete an argument.
    Complete {
        target: CompletionRef,
        argument: String,
        value: String,
        context: BTreeMap<String, String>,
    },
}

impl OfferCall {
    /// A short name for the call, for messages and the store's attach.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Self::Lists => "offers.list",
            Self::Read { .. } => "resources.read",
            Self::Get { .. } => "prompts.get",
            Self::Complete { .. } => "completions.complete",
        }
    }
}

/// A plugin's lists, as it gave them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct OfferLists {
    pub(crate) resources: Vec<ResourceSpec>,
    pub(crate) templates: Vec<TemplateSpec>,
    pub(crate) prompts: Vec<PromptSpec>,
}

/// What a 0.3 call answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OfferAnswer {
    Lists(OfferLists),
    Read(Vec<ResourcePart>),
    Get(PromptReply),
    Complete(Completion),
}

impl OfferAnswer {
    /// The bytes it carries, for the output cap.
    pub(crate) fn size(&self) -> usize {
        let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
        let spec = |s: &ResourceSpec| s.uri.len() + s.name.len() + text(&s.description);
        match self {
            Self::Lists(l) => {
                l.resources
                    .iter()
                    .chain(&l.templates)
                    .map(spec)
                    .sum::<usize>()
                    + l.prompts
                        .iter()
                        .map(|p| {
                            p.name.len()
                                + text(&p.description)
                                + p.arguments
                                    .iter()
                                    .map(|a| a.name.len() + text(&a.description))
                                    .sum::<usize>()
                        })
                        .sum::<usize>()
            }
            Self::Read(parts) => parts
                .iter()
                .map(|p| p.uri.len() + text(&p.mime_type) + contents_size(&p.contents))
                .sum(),
            Self::Get(reply) => {
                text(&reply.description)
                    + reply
                        .messages
                        .iter()
                        .map(|m| m.content.size())
                        .sum::<usize>()
            }
            Self::Complete(c) => c.values.iter().map(String::len).sum(),
        }
    }
}

fn contents_size(contents: &ResourceContents) -> usize {
    match contents {
        ResourceContents::Text(t) => t.len(),
        ResourceContents::Blob(b) => b.len(),
    }
}

/// The plugin's own failure of a 0.3 call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GuestOfferError {
    NotFound(String),
    InvalidInput(String),
    Failed(String),
    Denied(String),
    /// The call is for an interface the component does not export.
    NotExported(&'static str),
}

impl std::fmt::Display for GuestOfferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound(m) => write!(f, "not found: {m}"),
            Self::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Self::Failed(m) => write!(f, "failed: {m}"),
            Self::Denied(m) => write!(f, "denied: {m}"),
            Self::NotExported(i) => write!(f, "the plugin does not export `{i}`"),
        }
    }
}

impl From<wit::OfferError> for GuestOfferError {
    fn from(e: wit::OfferError) -> Self {
        match e {
            wit::OfferError::NotFound(m) => Self::NotFound(m),
            wit::OfferError::InvalidInput(m) => Self::InvalidInput(m),
            wit::OfferError::Failed(m) => Self::Failed(m),
            wit::OfferError::Denied(m) => Self::Denied(m),
        }
    }
}

type Answered = Result<OfferAnswer, GuestOfferError>;

fn pairs(map: BTreeMap<String, String>) -> Vec<(String, String)> {
    map.into_iter().collect()
}

impl OfferExports {
    /// Make `call` on this instance.
    pub(crate) async fn call(
        &self,
        store: &mut Store<StoreState>,
        call: OfferCall,
    ) -> wasmtime::Result<Answered> {
        match call {
            OfferCall::Lists => {
                let mut lists = OfferLists::default();
                if let Some(r) = &self.resources {
                    lists.resources = r
                        .call_list_resources(&mut *store)
                        .await?
                        .into_iter()
                        .map(resource_spec)
                        .collect();
                    lists.templates = r
                        .call_list_templates(&mut *store)
                        .await?
                        .into_iter()
                        .map(template_spec)
                        .collect();
                }
                if let Some(p) = &self.prompts {
                    lists.prompts = p
                        .call_list_prompts(&mut *store)
                        .await?
                        .into_iter()
                        .map(prompt_spec)
                        .collect();
                }
                Ok(Ok(OfferAnswer::Lists(lists)))
            }
            OfferCall::Read { uri, vars } => {
                let Some(r) = &self.resources else {
                    return Ok(Err(GuestOfferError::NotExported(RESOURCES)));
                };
                Ok(r.call_read(&mut *store, &uri, &pairs(vars))
                    .await?
                    .map(|parts| OfferAnswer::Read(parts.into_iter().map(part).collect()))
                    .map_err(GuestOfferError::from))
            }
            OfferCall::Get { name, arguments } => {
                let Some(p) = &self.prompts else {
                    return Ok(Err(GuestOfferError::NotExported(PROMPTS)));
                };
                Ok(p.call_get(&mut *store, &name, &pairs(arguments))
                    .await?
                    .map(|reply| OfferAnswer::Get(prompt_reply(reply)))
                    .map_err(GuestOfferError::from))
            }
            OfferCall::Complete {
                target,
                argument,
                value,
                context,
            } => {
                let Some(c) = &self.completions else {
                    return Ok(Err(GuestOfferError::NotExported(COMPLETIONS)));
                };
                let target = match target {
                    CompletionRef::Prompt(name) => completions::Target::Prompt(name),
                    CompletionRef::Template(uri) => completions::Target::Template(uri),
                };
                Ok(
                    c.call_complete(&mut *store, &target, &argument, &value, &pairs(context))
                        .await?
                        .map(|c| {
                            OfferAnswer::Complete(Completion {
                                values: c.values,
                                total: c.total,
                                has_more: c.has_more,
                            })
                        })
                        .map_err(GuestOfferError::from),
                )
            }
        }
    }
}

fn resource_spec(r: wit::ResourceInfo) -> ResourceSpec {
    ResourceSpec {
        uri: r.uri,
        name: r.name,
        description: r.description,
        mime_type: r.mime_type,
    }
}

fn template_spec(t: wit::TemplateInfo) -> TemplateSpec {
    ResourceSpec {
        uri: t.uri,
        name: t.name,
        description: t.description,
        mime_type: t.mime_type,
    }
}

fn prompt_spec(p: wit::PromptInfo) -> PromptSpec {
    PromptSpec {
        name: p.name,
        description: p.description,
        arguments: p
            .arguments
            .into_iter()
            .map(|a| PromptArg {
                name: a.name,
                description: a.description,
                required: a.required,
            })
            .collect(),
    }
}

fn contents(c: wit::Contents) -> ResourceContents {
    match c {
        wit::Contents::Text(t) => ResourceContents::Text(t),
        wit::Contents::Blob(b) => ResourceContents::Blob(b),
    }
}

fn part(p: wit::ResourcePart) -> ResourcePart {
    ResourcePart {
        uri: p.uri,
        mime_type: p.mime_type,
        contents: contents(p.contents),
    }
}

fn prompt_reply(reply: wit::PromptReply) -> PromptReply {
    PromptReply {
        description: reply.description,
        messages: reply
            .messages
            .into_iter()
            .map(|m| PromptMessage {
                role: match m.role {
                    wit::Role::User => PromptRole::User,
                    wit::Role::Assistant => PromptRole::Assistant,
                },
                content: match m.content {
                    wit::Part::Text(text) => Content::Text { text },
                    wit::Part::Image(m) => Content::Image {
                        media_type: m.media_type,
                        data: m.data,
                    },
                    wit::Part::Audio(m) => Content::Audio {
                        media_type: m.media_type,
                        data: m.data,
                    },
                    wit::Part::Resource(r) => Content::Resource {
                        uri: r.uri,
                        media_type: r.mime_type,
                        contents: contents(r.contents),
                    },
                },
            })
            .collect(),
    }
}
