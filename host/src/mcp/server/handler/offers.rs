//! Resources, resource templates, prompts and completions over MCP: one
//! implementation for every path a request takes. rmcp's handler
//! (`handler.rs`) calls it for every revision (the direct lanes answer
//! `tools/call` only and pass everything else to rmcp, so these requests
//! always reach it).
//!
//! - `resources/list`, `resources/templates/list` and `prompts/list` page
//!   by an opaque cursor ([`PAGE`] a page); a cursor the server did not
//!   give is -32602.
//! - `resources/read` of a URI nobody has is -32602 with `data.uri`, as
//!   the specification says, never empty contents; a read over a budget is
//!   -32603 saying which.
//! - `prompts/get` without a required argument is -32602.
//! - A connection with a handshake subscribes with `resources/subscribe`
//!   and hears `notifications/resources/updated` for its URIs and
//!   `list_changed` for resources and prompts; a 2026-07-28 client asks
//!   `subscriptions/listen` for the same.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    Prompt, PromptArgument, PromptMessage, PromptsCapability, ReadResourceResult, Reference,
    Resource, ResourceContents, ResourceTemplate, ResourcesCapability, Role, SubscriptionFilter,
};
use rmcp::service::SubscriptionContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::wire::content_block;
use super::{Client, next_change};
use crate::tools::{CompletionRef, CompletionRequest, OfferError, PromptRole, ToolRegistry};

/// Entries in one page of a list.
pub(super) const PAGE: usize = 100;

/// The URIs one connection subscribed to.
#[derive(Debug, Default)]
pub(super) struct Subscriptions(Mutex<HashSet<String>>);

/// The capabilities, declared only when the registry may hold any.
pub(super) fn declare(capabilities: &mut rmcp::model::ServerCapabilities, conn: &Client) {
    if !conn.tools.registry.offers().enabled() {
        return;
    }
    let mut resources = ResourcesCapability::default();
    resources.subscribe = Some(true);
    resources.list_changed = Some(true);
    capabilities.resources = Some(resources);
    let mut prompts = PromptsCapability::default();
    prompts.list_changed = Some(true);
    capabilities.prompts = Some(prompts);
    capabilities.completions = Some(rmcp::model::JsonObject::new());
}

/// The JSON-RPC error for `error`: a client's mistake is -32602 (an
/// unknown URI with `data.uri`), a source's failure -32603.
pub(super) fn mcp_error(error: OfferError) -> McpError {
    let message = error.to_string();
    match error {
        OfferError::UnknownResource { uri } => {
            McpError::invalid_params(message, Some(json!({ "uri": uri })))
        }
        OfferError::InvalidUri { uri, .. } => {
            McpError::invalid_params(message, Some(json!({ "uri": uri })))
        }
        OfferError::UnknownPrompt { .. } | OfferError::MissingArgument { .. } => {
            McpError::invalid_params(message, None)
        }
        _ => McpError::internal_error(message, None),
    }
}

/// One page of `items` (sorted by key) after `cursor`, and the next
/// page's cursor.
fn page<T>(
    items: Vec<(String, T)>,
    request: Option<&PaginatedRequestParams>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), McpError> {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let after = match request.and_then(|r| r.cursor.as_deref()) {
        None => None,
        Some(cursor) => Some(
            engine
                .decode(cursor)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| {
                    McpError::invalid_params(
                        "the cursor is not one this server gave: list again from the start",
                        None,
                    )
                })?,
        ),
    };
    let mut rest = items
        .into_iter()
        .skip_while(|(key, _)| after.as_ref().is_some_and(|after| key <= after))
        .peekable();
    let mut out = Vec::new();
    let mut last = None;
    while out.len() < size {
        let Some((key, item)) = rest.next() else {
            break;
        };
        last = Some(key);
        out.push(item);
    }
    let next = rest.peek().and(last).map(|key| engine.encode(key));
    Ok((out, next))
}

fn registry(conn: &Client) -> &ToolRegistry {
    &conn.tools.registry
}

pub(super) fn list_resources(
    conn: &Client,
    request: Option<&PaginatedRequestParams>,
) -> Result<ListResourcesResult, McpError> {
    let items = registry(conn).offers().resources().into_iter().map(|e| {
        let mut resource = Resource::new(e.spec.uri.clone(), e.spec.name);
        resource.description = e.spec.description;
        resource.mime_type = e.spec.mime_type;
        (e.spec.uri, resource)
    });
    let (resources, next) = page(items.collect(), request, PAGE)?;
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = next;
    Ok(result)
}

pub(super) fn list_templates(
    conn: &Client,
    request: Option<&PaginatedRequestParams>,
) -> Result<ListResourceTemplatesResult, McpError> {
    let items = registry(conn).offers().templates().into_iter().map(|e| {
        let mut template = ResourceTemplate::new(e.spec.uri.clone(), e.spec.name);
        template.description = e.spec.description;
        template.mime_type = e.spec.mime_type;
        (e.spec.uri, template)
    });
    let (templates, next) = page(items.collect(), request, PAGE)?;
    let mut result = ListResourceTemplatesResult::with_all_items(templates);
    result.next_cursor = next;
    Ok(result)
}

pub(super) async fn read(conn: &Client, uri: &str) -> Result<ReadResourceResult, McpError> {
    let parts = registry(conn).offers().read(uri).await.map_err(mcp_error)?;
    let contents = parts
        .into_iter()
        .map(|part| {
            let wire = match part.contents {
                crate::tools::ResourceContents::Text(text) => {
                    ResourceContents::text(text, part.uri)
                }
                crate::tools::ResourceContents::Blob(bytes) => ResourceContents::blob(
                    base64::engine::general_purpose::STANDARD.encode(bytes),
                    part.uri,
                ),
            };
            match part.mime_type {
                Some(mime_type) => wire.with_mime_type(mime_type),
                None => without_mime_type(wire),
            }
        })
        .collect();
    Ok(ReadResourceResult::new(contents))
}

/// `ResourceContents::text` says `text/plain`; a part without a type
/// goes without one.
fn without_mime_type(mut wire: ResourceContents) -> ResourceContents {
    if let ResourceContents::TextResourceContents { mime_type, .. } = &mut wire {
        *mime_type = None;
    }
    wire
}

pub(super) fn list_prompts(
    conn: &Client,
    request: Option<&PaginatedRequestParams>,
) -> Result<ListPromptsResult, McpError> {
    let items = registry(conn).offers().prompts().into_iter().map(|e| {
        let arguments = e
            .spec
            .arguments
            .into_iter()
            .map(|a| {
                let argument = PromptArgument::new(a.name).with_required(a.required);
                match a.description {
                    Some(d) => argument.with_description(d),
                    None => argument,
                }
            })
            .collect::<Vec<_>>();
        let prompt = Prompt::new(
            e.spec.name.clone(),
            e.spec.description,
            (!arguments.is_empty()).then_some(arguments),
        );
        (e.spec.name, prompt)
    });
    let (prompts, next) = page(items.collect(), request, PAGE)?;
    let mut result = ListPromptsResult::with_all_items(prompts);
    result.next_cursor = next;
    Ok(result)
}

pub(super) async fn get_prompt(
    conn: &Client,
    request: GetPromptRequestParams,
) -> Result<GetPromptResult, McpError> {
    let mut args = BTreeMap::new();
    for (key, value) in request.arguments.unwrap_or_default() {
        let value = match value {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        args.insert(key, value);
    }
    let reply = registry(conn)
        .offers()
        .get_prompt(&request.name, args)
        .await
        .map_err(mcp_error)?;
    let messages = reply
        .messages
        .into_iter()
        .map(|m| {
            let role = match m.role {
                PromptRole::User => Role::User,
                PromptRole::Assistant => Role::Assistant,
            };
            PromptMessage::new(role, content_block(m.content))
        })
        .collect();
    let result = GetPromptResult::new(messages);
    Ok(match reply.description {
        Some(d) => result.with_description(d),
        None => result,
    })
}

pub(super) async fn complete(
    conn: &Client,
    request: CompleteRequestParams,
) -> Result<CompleteResult, McpError> {
    let reference = match request.r#ref {
        Reference::Prompt(p) => CompletionRef::Prompt(p.name),
        Reference::Resource(r) => CompletionRef::Template(r.uri),
        _ => {
            return Err(McpError::invalid_params(
                "`ref` must be `ref/prompt` or `ref/resource`",
                None,
            ));
        }
    };
    let asked = CompletionRequest {
        argument: request.argument.name,
        value: request.argument.value,
        context: request
            .context
            .and_then(|c| c.arguments)
            .unwrap_or_default()
            .into_iter()
            .collect(),
    };
    let completion = registry(conn)
        .offers()
        .complete(&reference, asked)
        .await
        .map_err(mcp_error)?;
    let info =
        CompletionInfo::with_pagination(completion.values, completion.total, completion.has_more)
            .map_err(|e| McpError::internal_error(e, None))?;
    Ok(CompleteResult::new(info))
}

/// `resources/subscribe` (`on`) and `resources/unsubscribe`.
pub(super) async fn subscribe(conn: &Client, uri: &str, on: bool) -> Result<(), McpError> {
    let first = {
        let mut subscribed = conn
            .subscribed
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if on {
            if subscribed.len() >= 1024 && !subscribed.contains(uri) {
                return Err(McpError::invalid_params(
                    "a connection may subscribe to 1024 resources at most: unsubscribe from some",
                    Some(json!({ "uri": uri })),
                ));
            }
            subscribed.insert(uri.to_owned())
        } else {
            subscribed.remove(uri)
        }
    };
    if first {
        registry(conn)
            .offers()
            .subscribe(uri, on)
            .await
            .map_err(mcp_error)?;
    }
    Ok(())
}

/// Tell a connection with a handshake (`peer`) of changes to the resource
/// and prompt lists and of updates to the resources it subscribed to,
/// until it ends.
pub(super) fn forward(conn: &Arc<Client>, peer: Peer<RoleServer>) {
    let offers = || registry(conn).offers();
    if !offers().enabled() {
        return;
    }
    let (mut resources, mut prompts) = (offers().resource_changes(), offers().prompt_changes());
    let mut updates = offers().updates();
    let stop = conn.stopped().clone();
    let conn = Arc::downgrade(conn);
    tokio::spawn(async move {
        loop {
            let sent = tokio::select! {
                changed = next_change(&mut resources, &stop) => {
                    if !changed { return; }
                    peer.notify_resource_list_changed().await
                }
                changed = next_change(&mut prompts, &stop) => {
                    if !changed { return; }
                    peer.notify_prompt_list_changed().await
                }
                uri = updates.recv() => match uri {
                    Ok(uri) => {
                        let Some(conn) = conn.upgrade() else { return };
                        let wanted = conn.subscribed.0.lock().unwrap_or_else(PoisonError::into_inner).contains(&uri);
                        if !wanted { continue; }
                        peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri)).await
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => return,
                },
            };
            if let Err(e) = sent {
                tracing::debug!("cannot tell an MCP client that resources or prompts changed: {e}");
                return;
            }
        }
    });
}

/// What a 2026-07-28 `subscriptions/listen` may ask for: tool list
/// changes always, resources and prompts when the registry has them.
pub(super) fn accepted(conn: &Client, requested: &SubscriptionFilter) -> SubscriptionFilter {
    let builder = SubscriptionFilter::builder().tools_list_changed();
    if !registry(conn).offers().enabled() {
        return builder.build();
    }
    let uris = requested.resource_subscriptions.clone().unwrap_or_default();
    builder
        .prompts_list_changed()
        .resources_list_changed()
        .resource_subscriptions(uris.into_iter().take(1024))
        .build()
}

/// One `subscriptions/listen` stream, until it is cancelled.
pub(super) async fn listen(conn: &Client, context: SubscriptionContext) -> Result<(), McpError> {
    let offers = registry(conn).offers();
    let mut tools = registry(conn).changes();
    let (mut resources, mut prompts) = (offers.resource_changes(), offers.prompt_changes());
    let mut updates = offers.updates();
    let accepted = context.accepted().clone();
    let uris: HashSet<String> = accepted
        .resource_subscriptions
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    for uri in &uris {
        let _ = offers.subscribe(uri, true).await;
    }
    // The listener ends with `context`: nothing else stops it.
    let never = CancellationToken::new();
    let sink = context.sink();
    loop {
        let sent = tokio::select! {
            () = context.cancelled() => break,
            changed = next_change(&mut tools, &never) => {
                if !changed { break; }
                sink.notify_tool_list_changed().await
            }
            changed = next_change(&mut resources, &never), if accepted.resources_list_changed == Some(true) => {
                if !changed { break; }
                sink.notify_resource_list_changed().await
            }
            changed = next_change(&mut prompts, &never), if accepted.prompts_list_changed == Some(true) => {
                if !changed { break; }
                sink.notify_prompt_list_changed().await
            }
            uri = updates.recv(), if !uris.is_empty() => match uri {
                Ok(uri) if uris.contains(&uri) => sink.notify_resource_updated(uri).await,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => break,
            },
        };
        if let Err(e) = sent {
            tracing::debug!("cannot tell an MCP listener of a change: {e}");
            break;
        }
    }
    for uri in &uris {
        let _ = offers.subscribe(uri, false).await;
    }
    Ok(())
}

/// The methods of rmcp's `ServerHandler` that serve resources, templates,
/// prompts and completions, each a call of this module: expanded inside
/// the handler's `impl`.
macro_rules! methods {
    () => {
        async fn list_resources(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
            offers::list_resources(&self.conn, request.as_ref())
        }

        async fn list_resource_templates(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ListResourceTemplatesResult, rmcp::ErrorData> {
            offers::list_templates(&self.conn, request.as_ref())
        }

        async fn read_resource(
            &self,
            request: rmcp::model::ReadResourceRequestParams,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
            offers::read(&self.conn, &request.uri).await.map(Into::into)
        }

        async fn list_prompts(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ListPromptsResult, rmcp::ErrorData> {
            offers::list_prompts(&self.conn, request.as_ref())
        }

        async fn get_prompt(
            &self,
            request: rmcp::model::GetPromptRequestParams,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::GetPromptResponse, rmcp::ErrorData> {
            offers::get_prompt(&self.conn, request)
                .await
                .map(Into::into)
        }

        async fn complete(
            &self,
            request: rmcp::model::CompleteRequestParams,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::CompleteResult, rmcp::ErrorData> {
            offers::complete(&self.conn, request).await
        }

        #[allow(
            deprecated,
            reason = "2025-11-25's subscriptions, which toolhost serves"
        )]
        async fn subscribe(
            &self,
            request: rmcp::model::SubscribeRequestParams,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<(), rmcp::ErrorData> {
            offers::subscribe(&self.conn, &request.uri, true).await
        }

        #[allow(
            deprecated,
            reason = "2025-11-25's subscriptions, which toolhost serves"
        )]
        async fn unsubscribe(
            &self,
            request: rmcp::model::UnsubscribeRequestParams,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<(), rmcp::ErrorData> {
            offers::subscribe(&self.conn, &request.uri, false).await
        }
    };
}
pub(super) use methods;

#[cfg(test)]
#[path = "offers_tests.rs"]
mod tests;
