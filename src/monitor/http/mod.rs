//! The /metrics endpoint: a minimal HTTP/1.1 responder on `std::net`, on threads of its own.
//!
//! Written by hand rather than with a crate: it answers one GET path from a text prepared
//! elsewhere and closes each connection after its response. The small synchronous server
//! crates (tiny_http) bring a thread pool, chunked encoding and their own request types for
//! that; the others need an async runtime. A reader of this file sees everything the endpoint
//! does, and what bounds a hostile client:
//!
//! - each connection is answered on a thread of its own, at most [`MAX_CONNECTIONS`] at once;
//!   when all are taken, the oldest one that has not sent its whole request (or is stuck in
//!   its answer past `conns::STUCK_AFTER`) is dropped for the new one ([`conns`]): a client that
//!   holds connections open without sending delays no scrape, however many it holds; a
//!   connection is answered `503` at once only when every one is being answered;
//! - each request has one deadline, [`REQUEST_DEADLINE`] from its accept, for reading its head
//!   and writing its response: every read and write waits only for what is left of it (a
//!   timeout per read would let a client sending a byte now and then hold its thread for ever);
//!   past it the connection is answered `408` and closed;
//! - a request head (request line and headers) longer than [`MAX_REQUEST_BYTES`] is answered
//!   `431` and closed.
//!
//! Rendered on demand: a scrape asks for a fresh exposition ([`Published::fresh`]) and waits
//! for the recorder's thread, which renders after its next drain when one is wanted
//! ([`Published::wanted`]) and publishes it with [`Published::set`]: a pointer swap under a
//! lock held for that swap alone. Nothing is rendered between scrapes, so a monitor scraped
//! every 15 s costs a fifteenth of one scraped every second. The scrape writes the text after
//! releasing the lock, so a slow client never delays the recorder, and the measuring threads
//! never see the endpoint at all.

mod conns;
#[cfg(test)]
mod tests;

pub(crate) use conns::MAX_CONNECTIONS;

use conns::{Conns, Slot};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long one request may take from its accept: reading its head, waiting for a fresh text
/// and writing the response.
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How long a scrape waits for a fresh exposition: the recorder renders one after its next
/// drain (every 100 ms), so this is only reached when the process is stalled.
pub(crate) const FRESH_PATIENCE: Duration = Duration::from_secs(1);
/// The longest request head read (request line and headers); more is refused with 431.
pub(crate) const MAX_REQUEST_BYTES: usize = 8 * 1024;
/// How long a refusal (503, 408, 431) may take to write, and how long what the client still
/// sends is then read and dropped, so that the refusal is not lost to a reset from unread
/// input.
const REFUSAL_PATIENCE: Duration = Duration::from_millis(500);
/// The most bytes read and dropped after a refusal.
const DRAIN_BYTES: usize = 256 * 1024;
/// Stack of a connection's thread: it only parses a head and copies a prepared text.
const CONNECTION_STACK_BYTES: usize = 128 * 1024;
/// The media type of the Prometheus text format 0.0.4.
const METRICS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
const TEXT_TYPE: &str = "text/plain; charset=utf-8";

/// The latest exposition text, shared by the recorder (writer) and the endpoint (reader), with
/// the endpoint's request for a fresh one.
#[derive(Clone, Default)]
pub(crate) struct Published(Arc<Shared>);

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled by [`Published::set`].
    renewed: Condvar,
}

#[derive(Default)]
struct State {
    text: Arc<String>,
    /// How many texts have been set.
    generation: u64,
    /// A scrape waits for a text newer than the one there.
    wanted: bool,
}

impl Published {
    /// Replaces the text every later scrape serves, and wakes the scrapes waiting for it.
    pub(crate) fn set(&self, text: String) {
        let text = Arc::new(text);
        let mut state = self.lock();
        state.text = text;
        state.generation += 1;
        state.wanted = false;
        drop(state);
        self.0.renewed.notify_all();
    }

    /// Whether a scrape waits for a fresh text (the recorder then renders one).
    pub(crate) fn wanted(&self) -> bool {
        self.lock().wanted
    }

    /// The text now served.
    #[cfg(test)]
    pub(crate) fn get(&self) -> Arc<String> {
        Arc::clone(&self.lock().text)
    }

    /// A text set after this call, waiting for it at most `patience`; the text there then if
    /// none came (a recorder stalled by a stalled machine: the scrape still gets an answer).
    pub(crate) fn fresh(&self, patience: Duration) -> Arc<String> {
        let mut state = self.lock();
        let asked_at = state.generation;
        state.wanted = true;
        let (state, _) = self
            .0
            .renewed
            .wait_timeout_while(state, patience, |s| s.generation == asked_at)
            .unwrap_or_else(|e| e.into_inner());
        Arc::clone(&state.text)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Poisoning cannot leave a half-written pointer: take the value either way.
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves `published` on `listener` from a new thread, for the life of the process (the
/// threads hold nothing the process must release: the sockets close when the process exits).
pub(crate) fn serve(listener: TcpListener, published: Published) -> io::Result<()> {
    std::thread::Builder::new()
        .name("jl-metrics".into())
        .spawn(move || {
            let conns = Arc::new(Conns::default());
            // A failed accept (a client gone, out of file descriptors) skips that client only.
            for stream in listener.incoming().flatten() {
                let accepted = Instant::now();
                let Some(slot) = conns.admit(&stream, accepted) else {
                    refuse_at_once(&stream);
                    continue;
                };
                let published = published.clone();
                let deadline = accepted + REQUEST_DEADLINE;
                // A thread that cannot start drops the connection (closed) and its slot.
                let _ = std::thread::Builder::new()
                    .name("jl-metrics-conn".into())
                    .stack_size(CONNECTION_STACK_BYTES)
                    .spawn(move || answer(&stream, deadline, &published, &slot));
            }
        })
        .map(|_| ())
}

/// Reads one request and writes its response, all by `deadline`; a failed read or write ends
/// only this connection. A connection dropped for a newer one while it read ([`conns`]) is
/// answered `503` instead.
fn answer(stream: &TcpStream, deadline: Instant, published: &Published, slot: &Slot) {
    let head = read_head(stream, deadline);
    if !slot.begin_answer() {
        refuse(
            stream,
            "503 Service Unavailable",
            &format!(
                "dropped: {MAX_CONNECTIONS} connections were open and this one had not sent its \
                 whole request when a newer one came; send the request as soon as connected\n"
            ),
            false,
        );
        return;
    }
    match head {
        Ok(Head::Request(line)) => {
            let _ = write_by(stream, &respond(&line, published), deadline);
        }
        Ok(Head::TooLong) => refuse(
            stream,
            "431 Request Header Fields Too Large",
            &format!(
                "a request head (request line and headers) is at most {MAX_REQUEST_BYTES} bytes\n"
            ),
            true,
        ),
        Err(e) if timed_out(&e) => refuse(
            stream,
            "408 Request Timeout",
            &format!(
                "the request was not received within {} s\n",
                REQUEST_DEADLINE.as_secs()
            ),
            false,
        ),
        // The client closed or reset the connection: nobody to answer.
        Err(_) => {}
    }
}

/// What came of reading a request head.
enum Head {
    /// Its request line (the headers are read and ignored: nothing in them changes the
    /// answer).
    Request(String),
    /// Longer than [`MAX_REQUEST_BYTES`].
    TooLong,
}

/// Reads the request head up to its empty line (or the client's end of sending), each read
/// waiting only for what is left until `deadline`.
fn read_head(stream: &TcpStream, deadline: Instant) -> io::Result<Head> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let end = loop {
        stream.set_read_timeout(Some(left(deadline)?))?;
        let n = match (&*stream).read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = end_of_head(&head) {
            break end;
        }
        if n == 0 {
            // The client stopped sending without the empty line: answer what it sent.
            if head.is_empty() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            break head.len();
        }
        if head.len() > MAX_REQUEST_BYTES {
            return Ok(Head::TooLong);
        }
    };
    if end > MAX_REQUEST_BYTES {
        return Ok(Head::TooLong);
    }
    let line = head[..end].split(|&b| b == b'\n').next().unwrap_or(&[]);
    Ok(Head::Request(String::from_utf8_lossy(line).into_owned()))
}

/// Where the head ends (after its empty line, `\r\n\r\n` or a bare `\n\n`), if it has.
fn end_of_head(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len()).find_map(|i| {
        let rest = &bytes[i..];
        if rest.starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if rest.starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        }
    })
}

/// The time left until `deadline`, or a timeout error when there is none.
fn left(deadline: Instant) -> io::Result<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| io::ErrorKind::TimedOut.into())
}

/// Whether an error is a timeout (a read or write timeout is EAGAIN on Linux).
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// Writes `bytes` by `deadline`, each write waiting only for what is left of it.
fn write_by(stream: &TcpStream, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.set_write_timeout(Some(left(deadline)?))?;
        match (&*stream).write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Answers `status` and closes, within [`REFUSAL_PATIENCE`]. With `drain`, what the client
/// still sends is read and dropped first (up to [`DRAIN_BYTES`], within the same patience):
/// closing with unread input resets the connection, which can discard the answer before the
/// client reads it.
fn refuse(stream: &TcpStream, status: &str, body: &str, drain: bool) {
    let deadline = Instant::now() + REFUSAL_PATIENCE;
    let _ = write_by(
        stream,
        &response(status, TEXT_TYPE, body.as_bytes(), false),
        deadline,
    );
    let _ = stream.shutdown(Shutdown::Write);
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drain && drained < DRAIN_BYTES {
        let read = left(deadline)
            .and_then(|t| stream.set_read_timeout(Some(t)))
            .and_then(|_| (&*stream).read(&mut buf));
        match read {
            Ok(n) if n > 0 => drained += n,
            _ => break,
        }
    }
}

/// The 503 for a connection beyond [`MAX_CONNECTIONS`] when none can be dropped for it, on
/// the accepting thread: without
/// waiting for anything (what the client sent already is read, and the short answer fits in
/// the empty send buffer of a new connection).
fn refuse_at_once(stream: &TcpStream) {
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let _ = (&*stream).read(&mut [0u8; MAX_REQUEST_BYTES]);
    let _ = (&*stream).write(&response(
        "503 Service Unavailable",
        TEXT_TYPE,
        format!("{MAX_CONNECTIONS} connections to this endpoint are being answered; try again\n")
            .as_bytes(),
        false,
    ));
    let _ = stream.shutdown(Shutdown::Write);
}

/// The whole response to a request line.
fn respond(request_line: &str, published: &Published) -> Vec<u8> {
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    // The path without a query string (Prometheus may add none, people may add some).
    let path = target.split('?').next().unwrap_or("");
    let head_only = method == "HEAD";
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let text = published.fresh(FRESH_PATIENCE);
            response("200 OK", METRICS_TYPE, text.as_bytes(), head_only)
        }
        ("GET" | "HEAD", "/") => response(
            "200 OK",
            "text/html; charset=utf-8",
            INDEX_PAGE.as_bytes(),
            head_only,
        ),
        ("GET" | "HEAD", _) => response(
            "404 Not Found",
            TEXT_TYPE,
            b"not found: jitterlab serves /metrics\n",
            head_only,
        ),
        _ => response(
            "405 Method Not Allowed",
            TEXT_TYPE,
            b"only GET and HEAD are served\n",
            head_only,
        ),
    }
}

const INDEX_PAGE: &str = "<!DOCTYPE html>\n<html><head><title>jitterlab monitor</title></head>\
<body><h1>jitterlab monitor</h1><p><a href=\"/metrics\">/metrics</a>: wakeup latency in the \
Prometheus text format (docs/monitor.md).</p></body></html>\n";

fn response(status: &str, content_type: &str, body: &[u8], head_only: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    out
}
