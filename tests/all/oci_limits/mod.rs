//! Where a registry login may go (issue 36, class 3) and how long a
//! declared plugin may take to fetch (class 7): fake registries on
//! loopback that name a token service elsewhere, or drip their answers.

mod deadline;
mod origins;

use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use axum::response::Response;

/// One request a fake server saw: its path and its `Authorization` header.
type Request = (String, Option<String>);

/// What one fake server saw, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Request>>>);

impl Seen {
    fn record(&self, path: &str, headers: &HeaderMap) {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.0.lock().unwrap().push((path.to_owned(), auth));
    }

    fn all(&self) -> Vec<(String, Option<String>)> {
        self.0.lock().unwrap().clone()
    }

    /// Every `Authorization` header it received.
    fn authorizations(&self) -> Vec<String> {
        self.all().into_iter().filter_map(|(_, a)| a).collect()
    }
}

/// A loopback server answering every request with `reply(path, headers)`,
/// recording each in the `Seen` returned; its `host:port`.
async fn serve(
    reply: impl Fn(&str, &HeaderMap) -> Response + Clone + Send + Sync + 'static,
) -> (String, Seen) {
    let seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let recorder = seen.clone();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let reply = reply.clone();
        let recorder = recorder.clone();
        async move {
            let path = request
                .uri()
                .path_and_query()
                .map(ToString::to_string)
                .unwrap_or_default();
            recorder.record(&path, request.headers());
            reply(&path, request.headers())
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (address, seen)
}
