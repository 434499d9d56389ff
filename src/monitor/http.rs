//! The /metrics endpoint: a minimal HTTP/1.1 responder on `std::net`, on a thread of its own.
//!
//! Written by hand rather than with a crate: it answers one GET path from a text prepared
//! elsewhere, one connection at a time, and closes each connection after its response. The
//! small synchronous server crates (tiny_http) bring a thread pool, chunked encoding and their
//! own request types for that; the others need an async runtime. A reader of this file sees
//! everything the endpoint does: the request line is read with a timeout and a size bound, so
//! a slow or hostile client holds the thread for at most [`CLIENT_TIMEOUT`], never the
//! recorder.
//!
//! Rendered on demand: a scrape asks for a fresh exposition ([`Published::fresh`]) and waits
//! for the recorder's thread, which renders after its next drain when one is wanted
//! ([`Published::wanted`]) and publishes it with [`Published::set`]: a pointer swap under a
//! lock held for that swap alone. Nothing is rendered between scrapes, so a monitor scraped
//! every 15 s costs a fifteenth of one scraped every second. The scrape writes the text after
//! releasing the lock, so a slow client never delays the recorder, and the measuring threads
//! never see the endpoint at all.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a client may take to send its request or take the response.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a scrape waits for a fresh exposition: the recorder renders one after its next
/// drain (every 100 ms), so this is only reached when the process is stalled.
pub const FRESH_PATIENCE: Duration = Duration::from_secs(1);
/// The longest request head read (request line and headers); more is refused.
const MAX_REQUEST_BYTES: u64 = 8 * 1024;
/// The media type of the Prometheus text format 0.0.4.
const METRICS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The latest exposition text, shared by the recorder (writer) and the endpoint (reader), with
/// the endpoint's request for a fresh one.
#[derive(Clone, Default)]
pub struct Published(Arc<Shared>);

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
    pub fn set(&self, text: String) {
        let text = Arc::new(text);
        let mut state = self.lock();
        state.text = text;
        state.generation += 1;
        state.wanted = false;
        drop(state);
        self.0.renewed.notify_all();
    }

    /// Whether a scrape waits for a fresh text (the recorder then renders one).
    pub fn wanted(&self) -> bool {
        self.lock().wanted
    }

    /// The text now served.
    pub fn get(&self) -> Arc<String> {
        Arc::clone(&self.lock().text)
    }

    /// A text set after this call, waiting for it at most `patience`; the text there then if
    /// none came (a recorder stalled by a stalled machine: the scrape still gets an answer).
    pub fn fresh(&self, patience: Duration) -> Arc<String> {
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

/// Serves `published` on `listener` from a new thread, for the life of the process (the thread
/// holds nothing the process must release: the socket closes when the process exits).
pub fn serve(listener: TcpListener, published: Published) -> io::Result<()> {
    std::thread::Builder::new()
        .name("jl-metrics".into())
        .spawn(move || {
            // A failed accept (a client gone, out of file descriptors) skips that client only,
            // and a failed answer ends only its connection.
            for stream in listener.incoming().flatten() {
                let _ = answer(stream, &published);
            }
        })
        .map(|_| ())
}

/// Reads one request and writes its response.
fn answer(stream: TcpStream, published: &Published) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut reader = BufReader::new((&stream).take(MAX_REQUEST_BYTES));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The headers are read and ignored (nothing in them changes the answer), up to the bound.
    let mut header = String::new();
    loop {
        header.clear();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let response = respond(&request_line, published);
    (&stream).write_all(&response)
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
            "text/plain; charset=utf-8",
            b"not found: jitterlab serves /metrics\n",
            head_only,
        ),
        _ => response(
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// Over a real socket: /metrics serves the latest published text with its length, other
    /// paths 404, / links /metrics, and methods other than GET/HEAD are refused.
    #[test]
    fn serves_the_latest_text() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let published = Published::default();
        published.set("first 1\n".into());
        serve(listener, published.clone()).unwrap();
        // The recorder's side: renders when a scrape wants a text, as the monitor's loop does.
        let recorder = {
            let published = published.clone();
            std::thread::spawn(move || {
                for n in 0..2 {
                    while !published.wanted() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    published.set(format!("jitterlab_samples_total{{cpu=\"0\"}} {}\n", n + 5));
                }
            })
        };
        let r = get(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
        );
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: text/plain; version=0.0.4"), "{r}");
        assert!(r.contains("Content-Length: 35\r\n"), "{r}");
        assert!(
            r.ends_with("\r\n\r\njitterlab_samples_total{cpu=\"0\"} 5\n"),
            "{r}"
        );
        let r = get(addr, "GET /other HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"), "{r}");
        let r = get(addr, "GET / HTTP/1.0\r\n\r\n");
        assert!(r.contains("<a href=\"/metrics\">"), "{r}");
        let r = get(addr, "POST /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
        let r = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(r.ends_with("Connection: close\r\n\r\n"), "{r}");
        recorder.join().unwrap();
        assert_eq!(*published.get(), "jitterlab_samples_total{cpu=\"0\"} 6\n");
    }

    /// Without a recorder to answer, a scrape gets the text there after its patience.
    #[test]
    fn a_stalled_recorder_still_gets_an_answer() {
        let published = Published::default();
        published.set("old 1\n".into());
        let t0 = std::time::Instant::now();
        assert_eq!(*published.fresh(Duration::from_millis(50)), "old 1\n");
        assert!(t0.elapsed() >= Duration::from_millis(50));
        assert!(published.wanted());
    }
}
