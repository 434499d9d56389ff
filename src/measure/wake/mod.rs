//! Wake methods: the ways a measuring thread can sleep until a wakeup is due.
//!
//! Every method is one row of [`WAKE_METHODS`], and its waker lives in the file of its family
//! (`sleep.rs`, `select_poll.rs`, `itimer.rs`, `posix_timer.rs`, `timerfd.rs`, `rtc.rs`). The row
//! says everything the rest of jitterlab asks about a method: its name and help for `--wake`, its
//! schedule, the clocks it sleeps on, the limits the plan checks, how `--trace` joins its samples,
//! what the system must have, and how to run the loop with its waker. Adding a method is a waker
//! in a file and a row here. The row type, [`WakeMethod`], and its parts are in `method.rs`.
//!
//! Each waker is a type implementing [`Waker`]; the cycle loop is generic over it, so the
//! compiler produces one straight loop per method with no dynamic dispatch (see [`mod@driver`]).
//! What the latency means for each method is documented in docs/user-guide.md, "Wake methods".

pub(crate) mod driver;
pub mod inversion;
pub mod ipc;
pub(crate) mod itimer;
mod method;
pub(crate) mod plans;
pub(crate) mod posix_timer;
pub(crate) mod rtc;
pub(crate) mod select_poll;
pub mod signal;
pub mod sleep;
mod syscall;
pub(crate) mod tai;
pub(crate) mod timerfd;

pub(crate) use driver::Cycles;
pub(crate) use driver::driver;
pub(crate) use itimer::{ItimerOneShot, ItimerPeriodic};
pub use method::TraceJoin;
pub use method::WakeMethod;
pub(crate) use method::{ClockUse, Expiry, Requirement};
// The contract with the cycle loop, below this module so that the loop needs nothing of it.
pub use super::waker::Schedule;
pub use super::waker::Waker;
pub(crate) use posix_timer::PosixTimer;
pub(crate) use rtc::{RTC_DEVICE, RtcPeriodic};
pub(crate) use select_poll::{PollSleep, SelectSleep};
pub use signal::block_timer_signals;
pub(crate) use sleep::{AbsoluteSleep, Nanosleep, RelativeClockNanosleep};
pub(crate) use timerfd::TimerFd;

use super::clock::Clock;

/// Every wake method. The first row is `--wake`'s default; the order is the order of `--help`.
pub static WAKE_METHODS: &[WakeMethod] = &[
    WakeMethod {
        name: "clock-nanosleep",
        help: "clock_nanosleep to an absolute due time (TIMER_ABSTIME); the default, as cyclictest",
        schedule: Schedule::Absolute,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: driver::<AbsoluteSleep>(),
    },
    WakeMethod {
        name: "clock-nanosleep-rel",
        help: "clock_nanosleep for the interval, relative to the clock read before sleeping",
        schedule: Schedule::Relative,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_NEAR_DUE,
        requires: Requirement::Nothing,
        driver: driver::<RelativeClockNanosleep>(),
    },
    WakeMethod {
        name: "clock-nanosleep-tai",
        help: "clock_nanosleep to an absolute due time on CLOCK_TAI (TIMER_ABSTIME), the clock of TSN launch times",
        schedule: Schedule::Absolute,
        clocks: ClockUse::Own(Clock::Tai),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: driver::<tai::TaiSleep>(),
    },
    WakeMethod {
        name: "nanosleep",
        help: "nanosleep for the interval (relative)",
        schedule: Schedule::Relative,
        clocks: ClockUse::OneOf(&[Clock::Monotonic]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_NEAR_DUE,
        requires: Requirement::Nothing,
        driver: driver::<Nanosleep>(),
    },
    WakeMethod {
        name: "select",
        help: "select() with no descriptors and a timeout of the interval (relative, microsecond resolution)",
        schedule: Schedule::Relative,
        clocks: ClockUse::OneOf(&[Clock::Monotonic]),
        per_process: None,
        whole_microseconds: true,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_NEAR_DUE,
        requires: Requirement::Nothing,
        driver: driver::<SelectSleep>(),
    },
    WakeMethod {
        name: "poll",
        help: "ppoll() with no descriptors and a timeout of the interval (relative)",
        schedule: Schedule::Relative,
        clocks: ClockUse::OneOf(&[Clock::Monotonic]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_NEAR_DUE,
        requires: Requirement::Nothing,
        driver: driver::<PollSleep>(),
    },
    WakeMethod {
        name: "itimer",
        help: "setitimer(ITIMER_REAL) one-shot, re-armed each cycle; wait for SIGALRM (one CPU only)",
        schedule: Schedule::Relative,
        clocks: ClockUse::OneOf(&[Clock::Monotonic]),
        per_process: Some("ITIMER_REAL"),
        whole_microseconds: true,
        interval_rule: None,
        trace: TraceJoin {
            expiry: Expiry::NearDue,
            timer_functions: &["it_real_fn"],
        },
        requires: Requirement::Nothing,
        driver: driver::<ItimerOneShot>(),
    },
    WakeMethod {
        name: "itimer-periodic",
        help: "setitimer(ITIMER_REAL) periodic; wait for SIGALRM (one CPU only)",
        schedule: Schedule::Periodic,
        clocks: ClockUse::OneOf(&[Clock::Monotonic]),
        per_process: Some("ITIMER_REAL"),
        whole_microseconds: true,
        interval_rule: None,
        // setitimer takes only a relative first expiry: the kernel's grid lies a little after
        // jitterlab's.
        trace: TraceJoin {
            expiry: Expiry::NearDue,
            timer_functions: &["it_real_fn"],
        },
        requires: Requirement::Nothing,
        driver: driver::<ItimerPeriodic>(),
    },
    WakeMethod {
        name: "posix-timer",
        help: "timer_create periodic POSIX timer signalling the thread; wait with sigwaitinfo",
        schedule: Schedule::Periodic,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin {
            expiry: Expiry::AtDue,
            timer_functions: &["posix_timer_fn"],
        },
        requires: Requirement::Nothing,
        driver: driver::<PosixTimer>(),
    },
    WakeMethod {
        name: "timerfd",
        help: "timerfd periodic timer; wait with read()",
        schedule: Schedule::Periodic,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin {
            expiry: Expiry::AtDue,
            timer_functions: &["timerfd_tmrproc"],
        },
        requires: Requirement::Nothing,
        driver: driver::<TimerFd>(),
    },
    WakeMethod {
        name: "rtc",
        help: "Periodic interrupts of /dev/rtc (interval must give a power-of-two rate; one CPU only)",
        schedule: Schedule::Periodic,
        clocks: ClockUse::OneOf(&[Clock::Monotonic]),
        per_process: Some(RTC_DEVICE),
        whole_microseconds: false,
        interval_rule: Some(rtc::check_interval),
        // The RTC interrupt is no hrtimer: no timer expiry to filter for.
        trace: TraceJoin {
            expiry: Expiry::AtDue,
            timer_functions: &[],
        },
        requires: Requirement::Device {
            path: RTC_DEVICE,
            absent_means: "no RTC driver, or it is not exposed",
        },
        driver: driver::<RtcPeriodic>(),
    },
    // Woken by another thread (ipc/): the sender sleeps to each due time on its timer.
    WakeMethod {
        name: "signal",
        help: "Another thread queues a real-time signal carrying its clock read (rt_tgsigqueueinfo); wait with sigwaitinfo, as signaltest",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::signals::QueuedSignal>(),
    },
    WakeMethod {
        name: "sigwait",
        help: "Another thread sends a real-time signal (tgkill); wait with sigwait, as sigwaittest",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::signals::PlainSignal>(),
    },
    WakeMethod {
        name: "mq",
        help: "Another thread sends its clock read on a POSIX message queue; wait in mq_receive, as pmqtest",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::queues::PosixQueue>(),
    },
    WakeMethod {
        name: "mutex",
        help: "Another thread unlocks a pthread mutex; wait in pthread_mutex_lock, as ptsematest",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::locks::Mutex>(),
    },
    WakeMethod {
        name: "sem",
        help: "Another thread posts a POSIX semaphore; wait in sem_wait",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::locks::Semaphore>(),
    },
    WakeMethod {
        name: "sysv-sem",
        help: "Another thread increments a System V semaphore; wait in semop, as svsematest",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::locks::SysvSem>(),
    },
    WakeMethod {
        name: "futex",
        help: "Another thread wakes a futex (FUTEX_WAKE); wait in FUTEX_WAIT",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::locks::Futex>(),
    },
    WakeMethod {
        name: "pipe",
        help: "Another thread writes its clock read to a pipe; wait in read()",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::queues::Pipe>(),
    },
    WakeMethod {
        name: "eventfd",
        help: "Another thread writes its clock read to an eventfd; wait in read()",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::queues::EventFd>(),
    },
    WakeMethod {
        name: "condvar",
        help: "Another thread signals a pthread condition variable; wait in pthread_cond_wait",
        schedule: Schedule::Sender,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: ipc::ipc_driver::<ipc::locks::Condvar>(),
    },
    // Priority inversion (inversion.rs): a holder and a hog share the measuring thread's CPU.
    WakeMethod {
        name: "pi-mutex",
        help: "clock_nanosleep to the due time, then take a mutex a lower-priority thread holds (--hold) while a medium-priority hog runs (--hog): priority inversion, with inheritance unless --no-pi",
        schedule: Schedule::Absolute,
        clocks: ClockUse::OneOf(&[Clock::Monotonic, Clock::Realtime]),
        per_process: None,
        whole_microseconds: false,
        interval_rule: None,
        trace: TraceJoin::HRTIMER_AT_DUE,
        requires: Requirement::Nothing,
        driver: inversion::pi_mutex_driver(),
    },
];

impl WakeMethod {
    /// The method named `name` on the command line or in run.json.
    pub fn named(name: &str) -> Option<&'static WakeMethod> {
        WAKE_METHODS.iter().find(|m| m.name == name)
    }

    /// `--wake`'s default: the first row.
    pub(crate) fn default_method() -> &'static WakeMethod {
        &WAKE_METHODS[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (index, method) in WAKE_METHODS.iter().enumerate() {
            assert!(
                WAKE_METHODS[..index].iter().all(|m| m.name != method.name),
                "{} twice",
                method.name
            );
            assert_eq!(WakeMethod::named(method.name), Some(method));
        }
        assert_eq!(WakeMethod::default_method().name, "clock-nanosleep");
        assert_eq!(WakeMethod::named("hibernate"), None);
    }

    /// What the rows say must hold together: every method measures on some clock with the
    /// default `--clock`, a relative method's timer expires after its due time, and a clock of
    /// a method's own is not one `--clock` offers.
    #[test]
    fn rows_are_consistent() {
        for m in WAKE_METHODS {
            assert!(m.clock(Clock::DEFAULT).is_some(), "{}", m.name);
            if m.schedule == Schedule::Relative {
                assert_eq!(m.trace.expiry, Expiry::NearDue, "{}", m.name);
            }
            if let ClockUse::Own(own) = m.clocks {
                assert!(!own.row().on_command_line, "{}: --clock offers it", m.name);
            }
        }
    }
}
