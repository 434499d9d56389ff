//! The endpoint's open connections, and which one gives way when all are taken.
//!
//! A fixed number of connections answered at once bounds the threads; but a cap that refuses
//! the newest connection lets a few clients that connect and send nothing (or a byte now and
//! then) refuse every scrape for as long as they like, reconnecting each time the deadline
//! cuts them off (R05: eight such clients against a cap of 8, 9 of 10 scrapes answered 503). So when all
//! [`MAX_CONNECTIONS`] are taken, the newest connection is admitted and the oldest one that
//! has not sent its whole request is dropped instead: a scrape sends its request at once, so it
//! is never the one dropped, and holding the endpoint would take connecting faster than the
//! scrapes do. A connection being answered is dropped only once it has taken longer than
//! [`STUCK_AFTER`] (a client that does not read its answer); a connection is refused `503`
//! only when every one is being answered and none is stuck.

use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most connections answered at once; when all are taken, the oldest without a whole
/// request (or stuck in its answer) is dropped for a new one. Many, because a connection is
/// cheap (a blocked thread with a small stack) and every one held by a client that sends
/// nothing is one fewer for the scrapes; and because a client that reconnects at once each
/// time it is dropped makes each of its reconnections drop the next oldest: a scrape whose
/// request has not arrived when all the others have been dropped in turn is dropped too, and
/// that takes as many reconnections as there are connections.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take from its accept before it may be dropped while it is
/// being answered: an answer waits at most `FRESH_PATIENCE` (1 s) for its text and is written
/// into an empty send buffer, so one still going after this is held by a client that does not
/// read.
pub(crate) const STUCK_AFTER: Duration = Duration::from_secs(2);
/// The most connection threads alive at once: the [`MAX_CONNECTIONS`] open ones and the
/// dropped ones still writing their refusal (each within `REFUSAL_PATIENCE`). Beyond it a
/// connection is refused at once, so a flood of connections cannot make threads without end.
const MAX_THREADS: usize = 4 * MAX_CONNECTIONS;

/// The open connections, in the order they were accepted.
#[derive(Default)]
pub(super) struct Conns {
    open: Mutex<Open>,
    /// Connection threads alive: one per [`Slot`] not yet dropped.
    threads: AtomicUsize,
}

#[derive(Default)]
struct Open {
    next_id: u64,
    /// Oldest first.
    conns: Vec<Conn>,
}

struct Conn {
    id: u64,
    accepted: Instant,
    /// A second handle on the socket, to shut it down from the accepting thread.
    stream: TcpStream,
    /// Its whole request is read and it is being answered.
    answering: bool,
}

impl Conns {
    /// Admits `stream`, accepted at `accepted`, dropping the oldest connection that has not
    /// sent its whole request (or is stuck in its answer) when all are taken; `None` when
    /// none can be dropped (the caller refuses the connection at once).
    pub(super) fn admit(self: &Arc<Self>, stream: &TcpStream, accepted: Instant) -> Option<Slot> {
        if self.threads.load(Ordering::Acquire) >= MAX_THREADS {
            return None;
        }
        let handle = stream.try_clone().ok()?;
        let mut open = self.lock();
        if open.conns.len() >= MAX_CONNECTIONS {
            let victim = open.conns.iter().position(|c| !c.answering).or_else(|| {
                open.conns
                    .iter()
                    .position(|c| accepted.saturating_duration_since(c.accepted) >= STUCK_AFTER)
            })?;
            let dropped = open.conns.remove(victim);
            // One still reading its request has its reading side shut: its read returns at
            // once, and its thread, finding itself dropped, answers 503 and closes. One stuck
            // in writing its answer is shut both ways: the write fails at once.
            let how = if dropped.answering {
                Shutdown::Both
            } else {
                Shutdown::Read
            };
            let _ = dropped.stream.shutdown(how);
        }
        let id = open.next_id;
        open.next_id += 1;
        open.conns.push(Conn {
            id,
            accepted,
            stream: handle,
            answering: false,
        });
        self.threads.fetch_add(1, Ordering::AcqRel);
        Some(Slot {
            conns: Arc::clone(self),
            id,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // Poisoning cannot leave the list half-changed (no panic inside): take it either way.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One admitted connection, for its thread: it leaves the list when dropped.
pub(super) struct Slot {
    conns: Arc<Conns>,
    id: u64,
}

impl Slot {
    /// Marks the connection as being answered (its whole request read); false when it was
    /// dropped for a newer one meanwhile, and is then not to be answered.
    pub(super) fn begin_answer(&self) -> bool {
        let mut open = self.conns.lock();
        match open.conns.iter_mut().find(|c| c.id == self.id) {
            Some(c) => {
                c.answering = true;
                true
            }
            None => false,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.conns.lock();
        open.conns.retain(|c| c.id != self.id);
        drop(open);
        self.conns.threads.fetch_sub(1, Ordering::AcqRel);
    }
}
