//! The accept loop: the connection cap with eviction of idle strangers, the TLS handshake
//! with its time limit, and a watchdog per connection for the first-request and idle limits.

use crate::track::{State, Tracker};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// What a server lets a connection hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Time for the TLS handshake (servers without TLS have none).
    pub handshake_time: Duration,
    /// Time from the end of the handshake to the first admitted answer.
    pub first_request_time: Duration,
    /// Time an admitted connection may stay with no request in flight; None: no limit (the
    /// agent's: its coordinator may wait hours between calls; HTTP/2 pings find a peer that
    /// is gone).
    pub idle_time: Option<Duration>,
}

/// A byte stream a connection is served on: TCP, or TLS on TCP.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// One accepted connection, handed to the server's protocol.
pub struct Conn {
    pub io: Box<dyn Io>,
    /// Wrap the connection's service with it ([`Tracker::service`]).
    pub tracker: Tracker,
    /// Resolves when the server stops: finish what is in flight, then close.
    pub stopping: Stopping,
}

/// Tells a connection that its server stops.
#[derive(Clone, Debug)]
pub struct Stopping(watch::Receiver<bool>);

impl Stopping {
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|stopped| *stopped).await;
    }
}

/// The connections a server has open (for a count, and for eviction).
#[derive(Clone, Debug, Default)]
pub struct Connections(Arc<Mutex<Table>>);

#[derive(Debug, Default)]
struct Table {
    next_id: u64,
    /// By id, so the oldest comes first.
    open: BTreeMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    state: Arc<State>,
    evict: oneshot::Sender<()>,
}

impl Connections {
    /// Connections open now (in their handshake or served).
    pub fn active(&self) -> usize {
        self.lock().open.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A slot for a new connection: a free one, or the oldest stranger's (not admitted, no
    /// request in flight), which is told to close; None when every slot is in use.
    fn register(&self, max: usize) -> Option<(Registration, oneshot::Receiver<()>)> {
        let mut table = self.lock();
        if table.open.len() >= max {
            let stranger =
                table.open.iter().find(|(_, e)| !e.state.admitted() && !e.state.busy()).map(|(id, _)| *id)?;
            if let Some(evicted) = table.open.remove(&stranger) {
                let _ = evicted.evict.send(());
            }
        }
        let id = table.next_id;
        table.next_id += 1;
        let state = Arc::new(State::new());
        let (evict, evicted) = oneshot::channel();
        table.open.insert(id, Entry { state: Arc::clone(&state), evict });
        Some((Registration { connections: self.clone(), id, state }, evicted))
    }
}

/// A connection's slot; given back when dropped.
struct Registration {
    connections: Connections,
    id: u64,
    state: Arc<State>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.connections.lock().open.remove(&self.id);
    }
}

/// Accepts connections on `listener` until `shutdown` resolves, each in a task of its own:
/// TLS first when `tls` is Some, then `serve_one` with the stream, within `limits`. A
/// connection for which there is no slot goes to `refuse` (which may answer it, or drop
/// it). When `shutdown` resolves, every connection's [`Conn::stopping`] resolves too.
pub async fn serve<F, Fut>(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: Limits,
    connections: Connections,
    mut refuse: impl FnMut(TcpStream),
    serve_one: F,
    shutdown: impl Future<Output = ()>,
) where
    F: Fn(Conn) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let serve_one = Arc::new(serve_one);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let conn = match accepted {
            Ok((conn, _)) => conn,
            Err(_) => {
                // Out of file descriptors, for one: let connections end rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Some((registration, evicted)) = connections.register(limits.max_connections) else {
            refuse(conn);
            continue;
        };
        let _ = conn.set_nodelay(true);
        let (tls, serve_one, stopping) = (tls.clone(), Arc::clone(&serve_one), Stopping(stop_rx.clone()));
        tokio::spawn(async move {
            let state = Arc::clone(&registration.state);
            let served = async {
                let io: Box<dyn Io> = match tls {
                    None => Box::new(conn),
                    Some(acceptor) => match tokio::time::timeout(limits.handshake_time, acceptor.accept(conn)).await {
                        Ok(Ok(tls)) => Box::new(tls),
                        _ => return,
                    },
                };
                state.start();
                let conn = Conn { io, tracker: Tracker(Arc::clone(&state)), stopping };
                tokio::select! {
                    () = serve_one(conn) => {}
                    () = watchdog(&state, &limits) => {}
                }
            };
            // Evicted: dropping the connection's future closes it.
            tokio::select! {
                () = served => {}
                _ = evicted => {}
            }
            drop(registration);
        });
    }
    let _ = stop_tx.send(true);
}

/// Resolves when the connection has outlived its limits.
async fn watchdog(state: &State, limits: &Limits) {
    loop {
        match state.deadline(limits.first_request_time, limits.idle_time) {
            Some(at) if at <= tokio::time::Instant::now() => return,
            Some(at) => {
                // A request that starts meanwhile is seen when the time is up.
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = state.changed() => {}
                }
            }
            None => state.changed().await,
        }
    }
}
