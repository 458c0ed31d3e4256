//! The resource server's HTTP parts: the metadata routes and the layer
//! that checks every request's bearer token.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{AuthError, ResourceServer};

/// `GET` of the Protected Resource Metadata, at the path for the resource
/// and at the root well-known path (clients try both).
pub(in crate::mcp::server) fn metadata_routes(auth: &Arc<ResourceServer>) -> Router {
    let document = auth.metadata();
    let get = move || {
        let document = document.clone();
        async move { axum::Json(document) }
    };
    let root = "/.well-known/oauth-protected-resource";
    let mut routes = Router::new().route(&auth.metadata_path(), axum::routing::get(get.clone()));
    if auth.metadata_path() != root {
        routes = routes.route(root, axum::routing::get(get));
    }
    routes
}

/// Refuse a request without a token `auth` accepts (401, or 403 for
/// missing scopes, 503 when the verifier cannot decide); hand the
/// [`Principal`](super::Principal) on in the request's extensions.
pub(in crate::mcp::server) async fn require(
    State(auth): State<Arc<ResourceServer>>,
    mut request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth.authorize(authorization).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(error) => refusal(&auth, &error),
    }
}

/// The answer to a refused request.
pub(in crate::mcp::server) fn refusal(auth: &ResourceServer, error: &AuthError) -> Response {
    let status = match error {
        AuthError::Missing | AuthError::Invalid(_) => StatusCode::UNAUTHORIZED,
        AuthError::InsufficientScope { .. } => StatusCode::FORBIDDEN,
        AuthError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    let challenge = HeaderValue::from_str(&auth.challenge(error))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
    (
        status,
        [(header::WWW_AUTHENTICATE, challenge)],
        format!("{error}\n"),
    )
        .into_response()
}
