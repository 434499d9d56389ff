//! The endpoint over real loopback sockets: slow, idle and oversized clients against scrapes.

use super::*;
use std::net::SocketAddr;

fn get(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    // Bounded, so that a server that never answers fails the test instead of hanging it.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// An endpoint on a free loopback port whose recorder renders whenever a scrape wants a
/// text (as the monitor's loop does), for the life of the test process.
fn endpoint() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let published = Published::default();
    published.set("up 1\n".into());
    serve(listener, published.clone()).unwrap();
    std::thread::spawn(move || {
        loop {
            if published.wanted() {
                published.set("up 1\n".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    addr
}

/// D02: a client sending its head a byte a second (each byte well within any per-read
/// timeout) delays no scrape made meanwhile (each answered within 1 s), and is answered
/// 408 and cut off at the request's deadline, 5 s after it connected.
#[test]
fn a_slow_client_delays_no_scrape_and_is_cut_off_at_the_deadline() {
    let addr = endpoint();
    let slow = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        // The read timeout paces the bytes: one a second until the server answers.
        c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut answer = Vec::new();
        let mut buf = [0u8; 1024];
        while t0.elapsed() < Duration::from_secs(15) {
            let _ = c.write_all(b"X");
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(e) if timed_out(&e) => {}
                Err(_) => break,
            }
        }
        (t0.elapsed(), String::from_utf8_lossy(&answer).into_owned())
    });
    let t0 = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut scrapes = 0;
    while !slow.is_finished() && t0.elapsed() < Duration::from_secs(16) {
        let t = Instant::now();
        let r = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        slowest = slowest.max(t.elapsed());
        scrapes += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    let (cut_after, answer) = slow.join().unwrap();
    assert!(scrapes >= 10, "{scrapes} scrapes in {:?}", t0.elapsed());
    assert!(
        slowest < Duration::from_secs(1),
        "a scrape took {slowest:?}"
    );
    assert!(
        (REQUEST_DEADLINE..REQUEST_DEADLINE + Duration::from_millis(1500)).contains(&cut_after),
        "the slow client was cut off after {cut_after:?}"
    );
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
}

/// D18: a head over 8 KiB (a 100 KiB header) is answered 431 at once, not served; one just
/// under the bound is served.
#[test]
fn a_head_over_the_bound_is_refused() {
    let addr = endpoint();
    let padded = |n: usize| format!("GET /metrics HTTP/1.1\r\nX-Pad: {}\r\n\r\n", "a".repeat(n));
    let t = Instant::now();
    let r = get(addr, &padded(100 * 1024));
    assert!(
        r.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{r}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let r = get(addr, &padded(MAX_REQUEST_BYTES - 64));
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
}

/// A client that holds connections without sending its request: it connects, then sends
/// nothing (`drip` false) or a byte a second (`drip` true), and reconnects as soon as its
/// connection ends, until `stop`. Returns how many connections it made and how many of them
/// were answered 503 (dropped for a newer one).
fn hold_connections(
    addr: SocketAddr,
    drip: bool,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<(usize, usize)> {
    use std::sync::atomic::Ordering::Relaxed;
    std::thread::spawn(move || {
        let (mut made, mut dropped) = (0, 0);
        while !stop.load(Relaxed) {
            let Ok(mut c) = TcpStream::connect(addr) else {
                continue;
            };
            made += 1;
            c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            let mut answer = Vec::new();
            let mut buf = [0u8; 1024];
            while !stop.load(Relaxed) {
                if drip {
                    let _ = c.write_all(b"G");
                }
                match c.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                    Err(e) if timed_out(&e) => {}
                    Err(_) => break,
                }
            }
            if answer.starts_with(b"HTTP/1.1 503 ") {
                dropped += 1;
            }
        }
        (made, dropped)
    })
}

/// R05: sixteen clients holding connections (eight sending nothing, eight a byte a second,
/// each reconnecting as soon as it is cut off) deny no scrape: ten scrapes are each answered
/// 200 within 1 s. Before: eight held every one of the 8 connections answered at once, and 9
/// of 10 scrapes were answered 503.
#[test]
fn clients_holding_connections_deny_no_scrape() {
    let addr = endpoint();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let holders: Vec<_> = (0..16)
        .map(|i| hold_connections(addr, i % 2 == 1, Arc::clone(&stop)))
        .collect();
    // Until the holders have connected (and the drippers sent a few bytes).
    std::thread::sleep(Duration::from_millis(1500));
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let t = Instant::now();
        let r = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        slowest = slowest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let made: usize = holders.into_iter().map(|h| h.join().unwrap().0).sum();
    assert!(made >= 16, "{made} connections held");
    assert!(
        slowest < Duration::from_secs(1),
        "a scrape took {slowest:?}"
    );
}

/// R05, past the cap: with all [`MAX_CONNECTIONS`] held by clients that send nothing, each
/// scrape is answered 200 within 1 s: the first finds them all taken and the oldest idle
/// connection is dropped for it (answered 503), the next ones the place it gave back.
#[test]
fn idle_connections_past_the_cap_are_dropped_for_scrapes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let published = Published::default();
    published.set("up 1\n".into());
    serve(listener, published.clone()).unwrap();
    let renderer = published.clone();
    std::thread::spawn(move || {
        loop {
            if renderer.wanted() {
                renderer.set("up 1\n".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let mut idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    // Until the server has accepted them all.
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..10 {
        let t = Instant::now();
        let r = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
    // The oldest was dropped for the first scrape, answered 503 and closed; the others still
    // are open (each scrape gave its connection back, so the next found one free).
    for (k, c) in idle.iter_mut().enumerate().take(2) {
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut answer = String::new();
        let read = c.read_to_string(&mut answer);
        if k == 0 {
            assert!(read.is_ok(), "{k}: {read:?}");
            assert!(answer.starts_with("HTTP/1.1 503 "), "{k}: {answer}");
            assert!(answer.contains("dropped: "), "{k}: {answer}");
        } else {
            assert!(read.is_err_and(|e| timed_out(&e)), "{k}: {answer}");
        }
    }
}

/// A connection is refused 503 at once only when all [`MAX_CONNECTIONS`] are being answered
/// (here each waits for a text no recorder renders): none of them can be dropped for it. Once
/// they are answered, scrapes are served again.
#[test]
fn a_connection_is_refused_only_when_all_are_being_answered() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let published = Published::default();
    published.set("old 1\n".into());
    serve(listener, published).unwrap();
    let waiting: Vec<_> = (0..MAX_CONNECTIONS)
        .map(|_| std::thread::spawn(move || get(addr, "GET /metrics HTTP/1.1\r\n\r\n")))
        .collect();
    // Until the server has read all their requests (each then waits FRESH_PATIENCE).
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let r = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{r}");
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    for w in waiting {
        let r = w.join().unwrap();
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    }
    let r = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(r.ends_with("\r\n\r\nold 1\n"), "{r}");
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
