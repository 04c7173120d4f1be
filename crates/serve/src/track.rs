//! What a connection is doing, as its service sees it: requests in flight, when the last
//! one ended, and whether any was admitted. The accept loop's watchdog and its eviction
//! read it.

use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The server's mark on a response (in its extensions): this request passed the server's
/// own check (token or Host), so its connection is the server's client, not a stranger.
#[derive(Clone, Copy, Debug, Default)]
pub struct Admitted;

/// One connection's state.
#[derive(Debug)]
pub(crate) struct State {
    admitted: AtomicBool,
    in_flight: AtomicUsize,
    /// When the connection was handed to the protocol (after the TLS handshake).
    started: Mutex<Instant>,
    /// When the last request in flight ended (or `started`).
    quiet_since: Mutex<Instant>,
    /// Told when a request ends, so the watchdog looks again.
    changed: Notify,
}

impl State {
    pub(crate) fn new() -> State {
        let now = Instant::now();
        State {
            admitted: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            started: Mutex::new(now),
            quiet_since: Mutex::new(now),
            changed: Notify::new(),
        }
    }

    /// The protocol starts now (the handshake is over).
    pub(crate) fn start(&self) {
        let now = Instant::now();
        set(&self.started, now);
        set(&self.quiet_since, now);
    }

    pub(crate) fn admitted(&self) -> bool {
        self.admitted.load(Ordering::Acquire)
    }

    pub(crate) fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// When the connection is to be closed if nothing changes; None: not while it is as it is
    /// (a request in flight, or admitted with no idle limit).
    pub(crate) fn deadline(
        &self,
        first_request: std::time::Duration,
        idle: Option<std::time::Duration>,
    ) -> Option<Instant> {
        if self.busy() {
            return None;
        }
        if self.admitted() {
            idle.map(|idle| get(&self.quiet_since) + idle)
        } else {
            // From the start, not from the last refusal: refused requests buy no time.
            Some(get(&self.started) + first_request)
        }
    }

    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }
}

fn get(at: &Mutex<Instant>) -> Instant {
    *at.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn set(at: &Mutex<Instant>, to: Instant) {
    *at.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = to;
}

/// A request in flight; ends when dropped (its answer's body was sent, or it failed).
#[derive(Debug)]
struct InFlight(Arc<State>);

impl InFlight {
    fn start(state: &Arc<State>) -> InFlight {
        state.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(state))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            set(&self.0.quiet_since, Instant::now());
        }
        self.0.changed.notify_one();
    }
}

/// Gives a connection's service the means to tell the accept loop what it does.
#[derive(Clone, Debug)]
pub struct Tracker(pub(crate) Arc<State>);

impl Tracker {
    /// A tracker nothing watches: for a connection served outside [`crate::serve`] (an ssh
    /// session's stdio).
    pub fn detached() -> Tracker {
        Tracker(Arc::new(State::new()))
    }

    /// Wraps the connection's (hyper) service: each request counts as in flight until its
    /// answer's body is dropped, and an answer marked [`Admitted`] admits the connection.
    pub fn service<S>(&self, inner: S) -> Tracked<S> {
        Tracked { inner, state: Arc::clone(&self.0) }
    }

    /// Whether a request of this connection was admitted.
    pub fn is_admitted(&self) -> bool {
        self.0.admitted()
    }
}

/// A hyper service wrapped by [`Tracker::service`].
#[derive(Clone, Debug)]
pub struct Tracked<S> {
    inner: S,
    state: Arc<State>,
}

impl<S, B, RB> hyper::service::Service<Request<B>> for Tracked<S>
where
    S: hyper::service::Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    RB: Send + 'static,
{
    type Response = Response<TrackedBody<RB>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, req: Request<B>) -> Self::Future {
        let in_flight = InFlight::start(&self.state);
        let answer = self.inner.call(req);
        Box::pin(async move {
            let response = answer.await?;
            if response.extensions().get::<Admitted>().is_some() {
                in_flight.0.admitted.store(true, Ordering::Release);
            }
            Ok(response.map(|body| TrackedBody { body, _in_flight: in_flight }))
        })
    }
}

/// An answer's body that keeps its request in flight until it is dropped (a stream of
/// events is a request in flight as long as it lasts).
#[derive(Debug)]
pub struct TrackedBody<B> {
    body: B,
    _in_flight: InFlight,
}

impl<B: Body + Unpin> Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
