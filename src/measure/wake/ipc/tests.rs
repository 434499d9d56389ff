//! The channels' own tests: each carries a stamp across a fork.

use super::*;
use crate::sys::process::{fork_child, wait_for};

/// A channel opened for processes carries a stamp from a child forked afterwards (which
/// only sends: async-signal-safe) to the thread that opened it.
fn carries_a_stamp_across_a_fork<C: Channel>(name: &str) {
    let stamp = if usize::BITS >= 64 {
        0x1234_5678_9abc_def0
    } else {
        0x9abc_def0
    };
    let cell = SharedCell::new(C::open(Scope::Shared).unwrap()).unwrap();
    let channel: &C = &cell;
    // SAFETY: the child only sends through the channel and leaves.
    let pid = unsafe { fork_child(|| i32::from(channel.send(stamp).is_err())) }.unwrap();
    let got = channel.receive(|| false).unwrap();
    let reaped = wait_for(pid, true).unwrap().unwrap();
    assert_eq!((got, reaped.status), (stamp, 0), "{name}");
}

#[test]
fn every_channel_carries_a_stamp_from_a_forked_sender() {
    // Each in a thread of its own: the signal channels block their signal in the thread.
    std::thread::spawn(|| {
        carries_a_stamp_across_a_fork::<signals::QueuedSignal>("signal");
        carries_a_stamp_across_a_fork::<signals::PlainSignal>("sigwait");
        carries_a_stamp_across_a_fork::<queues::PosixQueue>("mq");
        carries_a_stamp_across_a_fork::<queues::Pipe>("pipe");
        carries_a_stamp_across_a_fork::<queues::EventFd>("eventfd");
        carries_a_stamp_across_a_fork::<locks::Mutex>("mutex");
        carries_a_stamp_across_a_fork::<locks::Condvar>("condvar");
        carries_a_stamp_across_a_fork::<locks::Futex>("futex");
        carries_a_stamp_across_a_fork::<locks::Semaphore>("sem");
        carries_a_stamp_across_a_fork::<locks::SysvSem>("sysv-sem");
    })
    .join()
    .unwrap();
}
