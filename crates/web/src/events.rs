//! `GET /api/v1/runs/{id}/events`: live updates as Server-Sent Events. Each event's data
//! is the run's entry of `GET /api/v1/runs` (status, live, first and last second), sent
//! at once and then whenever it changes, so a page learns of each new second without
//! polling; after the run ends, one last event and the stream closes.

use crate::server::Shared;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// How often the results file is looked at for a new second (a stat of the file and its
/// WAL; it is read only when they changed).
const CHECK_EVERY: Duration = Duration::from_millis(100);

struct Follow {
    shared: Arc<Shared>,
    id: String,
    last: Option<String>,
    ended: bool,
}

pub(crate) async fn stream(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    if let Err(e) = shared.api.find(&id) {
        let body = serde_json::json!({ "error": e.to_string() }).to_string();
        return (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    }
    let follow = Follow { shared, id, last: None, ended: false };
    let events = futures_util::stream::unfold(follow, |mut f| async move {
        if f.ended {
            return None;
        }
        loop {
            let (shared, id) = (Arc::clone(&f.shared), f.id.clone());
            // Reading the file is blocking work: it goes to the blocking pool.
            let entry = tokio::task::spawn_blocking(move || shared.api.entry(&id)).await.ok().flatten();
            if let Some(entry) = entry {
                let text = serde_json::to_string(&entry).unwrap_or_default();
                if f.last.as_deref() != Some(text.as_str()) {
                    f.ended = !entry.live();
                    f.last = Some(text.clone());
                    return Some((Ok::<_, Infallible>(Event::default().data(text)), f));
                }
            }
            tokio::time::sleep(CHECK_EVERY).await;
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}
