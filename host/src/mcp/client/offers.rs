//! What an upstream server offers besides tools: its resources, resource
//! templates and prompts listed page by page within a budget, a read, a
//! prompt, a completion, a subscription (a child of `client`, for its
//! connection).

use rmcp::ServiceError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, JsonObject,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, SubscribeRequestParams, UnsubscribeRequestParams,
};

use super::{MAX_LIST_PAGES, Upstream};

/// What an upstream server said it offers at its handshake.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Offered {
    pub(crate) resources: bool,
    pub(crate) subscribe: bool,
    pub(crate) prompts: bool,
    pub(crate) completions: bool,
}

/// Read pages of a list until `max` + 1 items (so the caller can tell the
/// list was cut), no more cursor, or [`MAX_LIST_PAGES`] pages.
async fn paged<T, F, Fut>(max: usize, mut page: F) -> Result<Vec<T>, ServiceError>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (more, next) = page(params).await?;
        items.extend(more);
        if items.len() > max {
            items.truncate(max + 1);
            break;
        }
        match next {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => break,
        }
    }
    Ok(items)
}

impl Upstream {
    /// What the server declared at its handshake.
    pub(crate) fn offered(&self) -> Offered {
        let Some(info) = self.peer.peer_info() else {
            return Offered::default();
        };
        let caps = &info.capabilities;
        Offered {
            resources: caps.resources.is_some(),
            subscribe: caps
                .resources
                .as_ref()
                .and_then(|r| r.subscribe)
                .unwrap_or(false),
            prompts: caps.prompts.is_some(),
            completions: caps.completions.is_some(),
        }
    }

    /// The server's resources, at most `max` (+ 1).
    pub(crate) async fn list_resources(&self, max: usize) -> Result<Vec<Resource>, ServiceError> {
        paged(max, |params| async move {
            let page = self.peer.list_resources(params).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await
    }

    /// The server's resource templates, at most `max` (+ 1).
    pub(crate) async fn list_resource_templates(
        &self,
        max: usize,
    ) -> Result<Vec<ResourceTemplate>, ServiceError> {
        paged(max, |params| async move {
            let page = self.peer.list_resource_templates(params).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await
    }

    /// The server's prompts, at most `max` (+ 1).
    pub(crate) async fn list_prompts(&self, max: usize) -> Result<Vec<Prompt>, ServiceError> {
        paged(max, |params| async move {
            let page = self.peer.list_prompts(params).await?;
            Ok((page.prompts, page.next_cursor))
        })
        .await
    }

    /// Read `uri`.
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<ReadResourceResult, ServiceError> {
        self.peer
            .read_resource(ReadResourceRequestParams::new(uri.to_owned()))
            .await
    }

    /// The prompt `name` with `arguments`.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<GetPromptResult, ServiceError> {
        let params = GetPromptRequestParams::new(name.to_owned()).with_arguments(arguments);
        self.peer.get_prompt(params).await
    }

    /// Completions.
    pub(crate) async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ServiceError> {
        self.peer.complete(params).await
    }

    /// Subscribe to `uri` (`on`), or end the subscription.
    #[expect(
        deprecated,
        reason = "resources/subscribe is how a 2025-11-25 server is subscribed to"
    )]
    pub(crate) async fn subscribe(&self, uri: &str, on: bool) -> Result<(), ServiceError> {
        if on {
            self.peer
                .subscribe(SubscribeRequestParams::new(uri.to_owned()))
                .await
        } else {
            self.peer
                .unsubscribe(UnsubscribeRequestParams::new(uri.to_owned()))
                .await
        }
    }
}
