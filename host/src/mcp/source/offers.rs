//! A server's resources, resource templates and prompts: listed when it
//! says it has them, held to the registry's budgets, kept in the
//! registries it is attached to under its ownership (its URIs as they
//! are, its prompts named with its prefix as its tools are), and read,
//! rendered and completed through its connection.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, Weak};

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, PromptReference, Reference,
    ResourceContents as Wire, ResourceTemplateReference, Role,
};

use super::{Link, names, output};
use crate::mcp::Upstream;
use crate::tools::{
    Completion, CompletionRequest, OfferError, PromptArg, PromptEntry, PromptMessage, PromptReply,
    PromptRole, PromptSpec, ResourceContents, ResourceEntry, ResourcePart, ResourceSpec,
    TemplateEntry, ToolRegistry, complete_fn, get_fn, read_fn,
};

/// What the server offers, as registry entries.
pub(super) type Lists = (Vec<ResourceEntry>, Vec<TemplateEntry>, Vec<PromptEntry>);

impl Link {
    /// List what the server offers besides tools (only what it declared at
    /// its handshake) and bring every attached registry up to date. A
    /// listing that fails is logged and offers nothing: the server's tools
    /// stay up.
    pub(super) async fn refresh_offers(self: &Arc<Self>, connection: &Upstream) {
        let offered = connection.offered();
        let max = self.plan.max_tools;
        let timeout = self.plan.list_timeout;
        let listing = async {
            let resources = if offered.resources {
                let r = connection.list_resources(max).await?;
                let t = connection.list_resource_templates(max).await?;
                (r, t)
            } else {
                Default::default()
            };
            let prompts = if offered.prompts {
                connection.list_prompts(max).await?
            } else {
                Vec::new()
            };
            Ok::<_, rmcp::ServiceError>((resources, prompts))
        };
        let ((resources, templates), prompts) = match tokio::time::timeout(timeout, listing).await {
            Ok(Ok(listed)) => listed,
            Ok(Err(e)) => {
                return self.warn_offers(&format!("listing its resources and prompts failed: {e}"));
            }
            Err(_) => return self.warn_offers("it did not list its resources and prompts in time"),
        };
        let lists = self.entries(resources, templates, prompts, offered.completions);
        *self.offers.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((lists, offered.subscribe));
        for registry in self.live_registries() {
            self.offers_into(&registry);
        }
    }

    fn warn_offers(&self, why: &str) {
        tracing::warn!(
            "MCP server `{}`: {}",
            self.plan.name,
            crate::text::escape_controls(&self.plan.bounds.redact.redact(why))
        );
    }

    /// The registries the server is attached to that are still alive.
    pub(super) fn live_registries(&self) -> Vec<Arc<ToolRegistry>> {
        let mut registries = self
            .registries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        registries.retain(|r| r.strong_count() > 0);
        registries.iter().filter_map(Weak::upgrade).collect()
    }

    /// The server says resource `uri` changed: tell the subscribers of
    /// every attached registry, if the URI is one it offers (one of its
    /// resources, or any when it has templates); another's is ignored.
    pub(super) fn resource_updated(&self, uri: &str) {
        let ours = self
            .offers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|((resources, templates, _), _)| {
                !templates.is_empty() || resources.iter().any(|r| r.spec.uri == uri)
            });
        if !ours {
            tracing::debug!(
                "MCP server `{}` said a resource it does not offer changed; ignored",
                self.plan.name
            );
            return;
        }
        for registry in self.live_registries() {
            registry.offers().resource_updated(uri);
        }
    }

    /// Put the server's last listing into `registry`'s offers.
    pub(super) fn offers_into(self: &Arc<Self>, registry: &ToolRegistry) {
        registry.offers().enable();
        let Some((lists, subscribe)) = self
            .offers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        else {
            return;
        };
        let subscribe = subscribe.then(|| {
            let link = Arc::downgrade(self);
            let forward: crate::tools::SubscribeFn = Arc::new(move |uri: String, on: bool| {
                let link = link.clone();
                Box::pin(async move {
                    let connection = upstream(&link)?;
                    connection
                        .subscribe(&uri, on)
                        .await
                        .map_err(|e| OfferError::Failed(format!("the MCP server refused: {e}")))
                })
            });
            forward
        });
        for error in registry
            .offers()
            .replace_owned(&self.origin(), lists, subscribe)
        {
            self.warn_offers(&format!("skipped: {error}"));
        }
    }

    /// The listed items as registry entries, each answered through the
    /// server's connection.
    fn entries(
        self: &Arc<Self>,
        resources: Vec<rmcp::model::Resource>,
        templates: Vec<rmcp::model::ResourceTemplate>,
        prompts: Vec<rmcp::model::Prompt>,
        completions: bool,
    ) -> Lists {
        let redact =
            |text: Option<String>| text.map(|t| self.plan.bounds.redact.redact(&t).into_owned());
        let owner = self.origin();
        let reader = || {
            let link = Arc::downgrade(self);
            read_fn(move |request| read(link.clone(), request.uri))
        };
        let resources = resources
            .into_iter()
            .map(|r| {
                let spec = ResourceSpec {
                    uri: r.uri.clone(),
                    name: r.name.clone(),
                    description: redact(r.description.clone()),
                    mime_type: r.mime_type.clone(),
                };
                ResourceEntry::new(spec, owner.clone(), reader())
            })
            .collect();
        let completer = |reference: Reference| {
            completions.then(|| {
                let link = Arc::downgrade(self);
                complete_fn(move |request| complete(link.clone(), reference.clone(), request))
            })
        };
        let templates = templates
            .into_iter()
            .filter_map(|t| {
                let spec = ResourceSpec {
                    uri: t.uri_template.clone(),
                    name: t.name.clone(),
                    description: redact(t.description.clone()),
                    mime_type: t.mime_type.clone(),
                };
                let reference =
                    Reference::Resource(ResourceTemplateReference::new(&t.uri_template));
                TemplateEntry::new(spec, owner.clone(), reader(), completer(reference))
                    .map_err(|e| self.warn_offers(&format!("skipped a template: {e}")))
                    .ok()
            })
            .collect();
        let prompts = prompts
            .into_iter()
            .filter_map(|p| {
                let Some(name) = names::tool_name(&self.plan.prefix, &p.name) else {
                    self.warn_offers(&format!(
                        "skipped its prompt `{}`: with prefix `{}` it is no valid name",
                        crate::text::untrusted(&p.name, 80),
                        self.plan.prefix
                    ));
                    return None;
                };
                let arguments = p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| PromptArg {
                        name: a.name,
                        description: redact(a.description),
                        required: a.required.unwrap_or(false),
                    })
                    .collect();
                let spec = PromptSpec {
                    name,
                    description: redact(p.description),
                    arguments,
                };
                let link = Arc::downgrade(self);
                let remote: Arc<str> = Arc::from(p.name.as_str());
                let get = {
                    let remote = Arc::clone(&remote);
                    get_fn(move |args| get(link.clone(), Arc::clone(&remote), args))
                };
                let reference = Reference::Prompt(PromptReference::new(p.name.clone()));
                Some(PromptEntry::new(
                    spec,
                    owner.clone(),
                    get,
                    completer(reference),
                ))
            })
            .collect();
        (resources, templates, prompts)
    }
}

/// The server's connection now, or why there is none.
fn upstream(link: &Weak<Link>) -> Result<Upstream, OfferError> {
    let link = link
        .upgrade()
        .ok_or_else(|| OfferError::Failed("the MCP server was removed".into()))?;
    let state = link.state();
    state.connection.clone().ok_or_else(|| {
        OfferError::Failed(format!(
            "MCP server `{}` is not running ({}); toolhost restarts it with backoff",
            link.plan.name,
            state.down.as_deref().unwrap_or("not started")
        ))
    })
}

/// The server's error, redacted and naming it.
fn failed(link: &Weak<Link>, what: &str, error: &dyn std::fmt::Display) -> OfferError {
    let (server, text) = match link.upgrade() {
        Some(link) => (
            link.plan.name.clone(),
            link.plan
                .bounds
                .redact
                .redact(&error.to_string())
                .into_owned(),
        ),
        None => (String::new(), error.to_string()),
    };
    OfferError::Failed(format!(
        "MCP server `{server}` failed {what}: {}",
        crate::text::untrusted(&text, 1024)
    ))
}

async fn read(link: Weak<Link>, uri: String) -> Result<Vec<ResourcePart>, OfferError> {
    use base64::Engine as _;
    let result = upstream(&link)?
        .read_resource(&uri)
        .await
        .map_err(|e| failed(&link, "to read a resource", &e))?;
    result
        .contents
        .into_iter()
        .map(|part| match part {
            Wire::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Ok(ResourcePart {
                uri,
                mime_type,
                contents: ResourceContents::Text(text),
            }),
            Wire::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .map_err(|e| {
                        failed(
                            &link,
                            "to read a resource",
                            &format!("its blob is not base64 ({e})"),
                        )
                    })?;
                Ok(ResourcePart {
                    uri,
                    mime_type,
                    contents: ResourceContents::Blob(bytes),
                })
            }
            _ => Err(failed(
                &link,
                "to read a resource",
                &"it answered a kind of contents toolhost does not know",
            )),
        })
        .collect()
}

async fn get(
    link: Weak<Link>,
    remote: Arc<str>,
    args: BTreeMap<String, String>,
) -> Result<PromptReply, OfferError> {
    let arguments = args
        .into_iter()
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect();
    let result = upstream(&link)?
        .get_prompt(&remote, arguments)
        .await
        .map_err(|e| failed(&link, "to render a prompt", &e))?;
    let server = link
        .upgrade()
        .map(|l| l.plan.name.clone())
        .unwrap_or_default();
    let messages = result
        .messages
        .into_iter()
        .map(|m| {
            let content = output::part(&server, m.content)
                .map_err(|e| failed(&link, "to render a prompt", &e))?;
            let role = match m.role {
                Role::Assistant => PromptRole::Assistant,
                _ => PromptRole::User,
            };
            Ok(PromptMessage { role, content })
        })
        .collect::<Result<_, OfferError>>()?;
    Ok(PromptReply {
        description: result.description,
        messages,
    })
}

async fn complete(
    link: Weak<Link>,
    reference: Reference,
    request: CompletionRequest,
) -> Result<Completion, OfferError> {
    let mut params = CompleteRequestParams::new(
        reference,
        ArgumentInfo::new(request.argument, request.value),
    );
    if !request.context.is_empty() {
        params = params.with_context(CompletionContext::with_arguments(
            request.context.into_iter().collect(),
        ));
    }
    let result = upstream(&link)?
        .complete(params)
        .await
        .map_err(|e| failed(&link, "to complete an argument", &e))?;
    Ok(Completion {
        values: result.completion.values,
        total: result.completion.total,
        has_more: result.completion.has_more.unwrap_or(false),
    })
}
