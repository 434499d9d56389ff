//! Wake methods: the ways a measuring thread can sleep until a wakeup is due.
//!
//! Each method is a small type implementing [`Waker`]; the cycle loop is generic over it, so
//! the compiler produces one straight loop per method with no dynamic dispatch. What the
//! latency means for each method is documented in docs/user-guide.md, "Wake methods".

use super::clock::{Clock, ns_to_timespec};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// A wake method as chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeMethod {
    ClockNanosleep,
    ClockNanosleepRel,
    Nanosleep,
    Select,
    Poll,
    Itimer,
    ItimerPeriodic,
    PosixTimer,
    Timerfd,
    Rtc,
}

/// How the due time of each wakeup is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// The thread asks for an absolute due time; due times follow a fixed grid.
    Absolute,
    /// The thread asks to sleep for the interval; the due time is the last clock read plus it.
    Relative,
    /// A kernel timer fires on a fixed grid armed once; the thread waits for each expiry.
    Periodic,
}

impl WakeMethod {
    /// The name used on the command line and in run.json.
    pub fn name(self) -> &'static str {
        match self {
            WakeMethod::ClockNanosleep => "clock-nanosleep",
            WakeMethod::ClockNanosleepRel => "clock-nanosleep-rel",
            WakeMethod::Nanosleep => "nanosleep",
            WakeMethod::Select => "select",
            WakeMethod::Poll => "poll",
            WakeMethod::Itimer => "itimer",
            WakeMethod::ItimerPeriodic => "itimer-periodic",
            WakeMethod::PosixTimer => "posix-timer",
            WakeMethod::Timerfd => "timerfd",
            WakeMethod::Rtc => "rtc",
        }
    }

    pub fn schedule(self) -> Schedule {
        match self {
            WakeMethod::ClockNanosleep => Schedule::Absolute,
            WakeMethod::ClockNanosleepRel
            | WakeMethod::Nanosleep
            | WakeMethod::Select
            | WakeMethod::Poll
            | WakeMethod::Itimer => Schedule::Relative,
            WakeMethod::ItimerPeriodic
            | WakeMethod::PosixTimer
            | WakeMethod::Timerfd
            | WakeMethod::Rtc => Schedule::Periodic,
        }
    }

    /// Methods built on a per-process resource (ITIMER_REAL, the one /dev/rtc) can serve only
    /// one measuring thread.
    pub fn single_thread_only(self) -> bool {
        matches!(
            self,
            WakeMethod::Itimer | WakeMethod::ItimerPeriodic | WakeMethod::Rtc
        )
    }

    /// Methods that cannot follow a realtime clock: nanosleep, select, poll and setitimer always
    /// measure their sleep on the monotonic clock.
    pub fn supports_clock(self, clock: Clock) -> bool {
        clock == Clock::Monotonic
            || matches!(
                self,
                WakeMethod::ClockNanosleep
                    | WakeMethod::ClockNanosleepRel
                    | WakeMethod::PosixTimer
                    | WakeMethod::Timerfd
            )
    }
}

/// The signal that setitimer(ITIMER_REAL) delivers.
pub const ITIMER_SIGNAL: libc::c_int = libc::SIGALRM;

/// The signal of the per-thread POSIX timers: the first real-time signal, which queues.
pub fn posix_timer_signal() -> libc::c_int {
    libc::SIGRTMIN()
}

/// Blocks the timer signals in the calling thread, and so in every thread it creates later.
///
/// Must run in the main thread before any other thread exists: the timer signals are then
/// delivered only through sigwaitinfo in the measuring thread, never to a default handler
/// that would end the process.
pub fn block_timer_signals() {
    // SAFETY: sigset operations on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, ITIMER_SIGNAL);
        libc::sigaddset(&mut set, posix_timer_signal());
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// A way to sleep until the next wakeup is due.
pub trait Waker {
    /// Blocks until `due_ns` (absolute methods), for `interval_ns` (relative methods), or until
    /// the next expiry of the armed timer (periodic methods). Exactly one blocking syscall,
    /// except setitimer one-shot, which must re-arm first.
    ///
    /// A signal that interrupts the sleep resumes it, unless `stop` is set: then the wait ends
    /// with [`io::ErrorKind::Interrupted`]. That is how a stop reaches a thread asleep for a
    /// long interval at once ([`crate::measure::thread::interrupt`]).
    fn wait(&mut self, due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()>;

    /// The due time of the first wakeup, for periodic methods whose grid the kernel sets.
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        Ok(planned_ns)
    }

    /// Periodic methods only, and only after a wakeup a period or more late: the loop skipped
    /// the grid points that passed (counting them as missed) and will next expect `next_due_ns`.
    ///
    /// Every periodic timer must be re-aimed here. The kernel moves a periodic timer on at some
    /// moment of its own (setitimer in the interrupt, timerfd in read(), POSIX timers when the
    /// signal is taken), and the loop reads the clock only after the wait returns: a thread held
    /// between the two across a grid point finds that point skipped by the loop but still armed
    /// in the kernel, which would wake the next wait a period early and keep every later sample
    /// a period off the grid (tests/wake_grid.rs holds threads in exactly that window).
    ///
    /// Absolute and relative methods sleep to the time each wait is given and need nothing.
    fn skipped_to(&mut self, _next_due_ns: u64) -> io::Result<()> {
        Ok(())
    }
}

/// After a signal interrupted a sleep: resume it, unless a stop was requested.
fn resume_unless_stopped(stop: &AtomicBool) -> io::Result<()> {
    if stop.load(Relaxed) {
        Err(io::ErrorKind::Interrupted.into())
    } else {
        Ok(())
    }
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// clock_nanosleep(TIMER_ABSTIME) to the due time; the cyclictest default.
pub struct AbsoluteSleep {
    pub clock: Clock,
}

impl Waker for AbsoluteSleep {
    fn wait(&mut self, due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let ts = ns_to_timespec(due_ns);
        loop {
            // SAFETY: valid timespec; no remainder is needed for absolute sleeps.
            let rc = unsafe {
                libc::clock_nanosleep(
                    self.clock.id(),
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            match rc {
                0 => return Ok(()),
                // Same absolute target: simply sleep again.
                libc::EINTR => resume_unless_stopped(stop)?,
                e => return Err(io::Error::from_raw_os_error(e)),
            }
        }
    }
}

/// clock_nanosleep or nanosleep for the interval. On EINTR the remainder is slept, so that the
/// requested sleep is honoured as a whole.
pub struct RelativeSleep {
    pub clock: Clock,
    /// Use nanosleep(2) rather than clock_nanosleep(2).
    pub plain_nanosleep: bool,
}

impl Waker for RelativeSleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let mut req = ns_to_timespec(interval_ns);
        let mut rem = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            // SAFETY: valid timespecs.
            let err = if self.plain_nanosleep {
                if unsafe { libc::nanosleep(&req, &mut rem) } == 0 {
                    0
                } else {
                    io::Error::last_os_error().raw_os_error().unwrap_or(0)
                }
            } else {
                unsafe { libc::clock_nanosleep(self.clock.id(), 0, &req, &mut rem) }
            };
            match err {
                0 => return Ok(()),
                libc::EINTR => {
                    resume_unless_stopped(stop)?;
                    req = rem;
                }
                e => return Err(io::Error::from_raw_os_error(e)),
            }
        }
    }
}

/// select() with no descriptors: the classic portable sleep, microsecond resolution.
pub struct SelectSleep;

impl Waker for SelectSleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let us = interval_ns / 1_000;
        let mut tv = libc::timeval {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_usec: (us % 1_000_000) as libc::suseconds_t,
        };
        loop {
            // SAFETY: no descriptor sets; Linux updates tv to the time left on EINTR.
            let rc = unsafe {
                libc::select(
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    &mut tv,
                )
            };
            if rc >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
            resume_unless_stopped(stop)?;
        }
    }
}

/// ppoll() with no descriptors: poll(2)'s timeout with a timespec, so sub-millisecond
/// intervals are honoured (plain poll rounds up to whole milliseconds).
pub struct PollSleep;

impl Waker for PollSleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let ts = ns_to_timespec(interval_ns);
        loop {
            // SAFETY: zero descriptors; valid timespec; no signal mask change.
            let rc = unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) };
            if rc >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
            resume_unless_stopped(stop)?;
        }
    }
}

/// Waits for one of `signal`, which every thread blocks (see [`block_timer_signals`]).
fn wait_for_signal(set: &libc::sigset_t, stop: &AtomicBool) -> io::Result<()> {
    loop {
        // SAFETY: valid set; the siginfo is not needed.
        let rc = unsafe { libc::sigwaitinfo(set, std::ptr::null_mut()) };
        if rc >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
        resume_unless_stopped(stop)?;
    }
}

/// Takes every pending signal of `set` without waiting.
fn drain_signal(set: &libc::sigset_t) {
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid set and timeout; the siginfo is not needed. Returns -1 (EAGAIN) once none
    // is pending.
    while unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &zero) } >= 0 {}
}

fn signal_set(signal: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigset operations on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        set
    }
}

fn set_itimer(value_ns: u64, interval_ns: u64) -> io::Result<()> {
    let tv = |ns: u64| {
        let us = ns.div_ceil(1_000);
        libc::timeval {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_usec: (us % 1_000_000) as libc::suseconds_t,
        }
    };
    let it = libc::itimerval {
        it_interval: tv(interval_ns),
        it_value: tv(value_ns),
    };
    // SAFETY: valid itimerval.
    check(unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) }).map(drop)
}

/// setitimer(ITIMER_REAL) one-shot, re-armed every cycle, then sigwaitinfo for SIGALRM.
pub struct ItimerOneShot {
    set: libc::sigset_t,
}

impl Default for ItimerOneShot {
    fn default() -> Self {
        ItimerOneShot {
            set: signal_set(ITIMER_SIGNAL),
        }
    }
}

impl Waker for ItimerOneShot {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        set_itimer(interval_ns, 0)?;
        wait_for_signal(&self.set, stop)
    }
}

/// setitimer(ITIMER_REAL) periodic, armed once, then sigwaitinfo for each SIGALRM.
pub struct ItimerPeriodic {
    set: libc::sigset_t,
    clock: Clock,
    interval_ns: u64,
}

impl ItimerPeriodic {
    pub fn new(clock: Clock, interval_ns: u64) -> Self {
        ItimerPeriodic {
            set: signal_set(ITIMER_SIGNAL),
            clock,
            interval_ns,
        }
    }
}

impl Waker for ItimerPeriodic {
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        // setitimer takes only a relative first expiry: arm it to land on the planned time.
        let now = self.clock.now_ns();
        let first = planned_ns.max(now + 1_000);
        set_itimer(first - now, self.interval_ns)?;
        Ok(first)
    }

    fn wait(&mut self, _due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        wait_for_signal(&self.set, stop)
    }

    /// setitimer's timer moves on in the interrupt (it_real_fn forwards it past the expiry), not
    /// when the thread takes the signal: after a late wakeup, a grid point between the expiry and
    /// the thread running has fired or is about to. Stop the timer, drop that signal, and aim
    /// the timer at the loop's next due time.
    fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
        set_itimer(0, 0)?;
        drain_signal(&self.set);
        let now = self.clock.now_ns();
        set_itimer(next_due_ns.saturating_sub(now).max(1_000), self.interval_ns)
    }
}

impl Drop for ItimerPeriodic {
    fn drop(&mut self) {
        let _ = set_itimer(0, 0);
    }
}

/// The absolute arming of a periodic timer: first expiry at `planned_ns`, or 1 us from now if
/// that has passed (arming in the past would fire at once and count as latency).
fn periodic_spec(clock: Clock, planned_ns: u64, interval_ns: u64) -> (u64, libc::itimerspec) {
    let first = planned_ns.max(clock.now_ns() + 1_000);
    (first, absolute_spec(first, interval_ns))
}

/// First expiry at the absolute time `first_ns`, then every `interval_ns`.
fn absolute_spec(first_ns: u64, interval_ns: u64) -> libc::itimerspec {
    libc::itimerspec {
        it_interval: ns_to_timespec(interval_ns),
        it_value: ns_to_timespec(first_ns),
    }
}

/// A POSIX timer (timer_create) firing periodically at absolute times, signalling this thread
/// only (SIGEV_THREAD_ID), awaited with sigwaitinfo.
pub struct PosixTimer {
    timer: libc::timer_t,
    set: libc::sigset_t,
    clock: Clock,
    interval_ns: u64,
}

impl PosixTimer {
    /// Creates the timer, directed at the calling thread.
    pub fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        let signal = posix_timer_signal();
        // SAFETY: sigevent is plain data; the kernel reads the fields set here.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signal;
        // SAFETY: gettid has no failure mode.
        sev.sigev_notify_thread_id = unsafe { libc::gettid() };
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers.
        check(unsafe { libc::timer_create(clock.id(), &mut sev, &mut timer) })?;
        Ok(PosixTimer {
            timer,
            set: signal_set(signal),
            clock,
            interval_ns,
        })
    }
}

impl PosixTimer {
    fn settime(&self, spec: &libc::itimerspec) -> io::Result<()> {
        // SAFETY: valid timer and itimerspec.
        check(unsafe {
            libc::timer_settime(self.timer, libc::TIMER_ABSTIME, spec, std::ptr::null_mut())
        })
        .map(drop)
    }
}

impl Waker for PosixTimer {
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        let (first, spec) = periodic_spec(self.clock, planned_ns, self.interval_ns);
        self.settime(&spec)?;
        Ok(first)
    }

    fn wait(&mut self, _due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        wait_for_signal(&self.set, stop)
    }

    /// The kernel moves a POSIX timer on when its signal is taken: taken before a grid point
    /// that the loop then skips, the timer still fires for it. Stop the timer, drop a signal it
    /// may have queued, and arm it at the loop's next due time (absolute: a time that passed
    /// meanwhile fires at once and is measured against that time).
    fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
        // SAFETY: itimerspec is plain data; all zero disarms the timer.
        self.settime(&unsafe { std::mem::zeroed() })?;
        drain_signal(&self.set);
        self.settime(&absolute_spec(next_due_ns, self.interval_ns))
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: the timer was created by timer_create and is deleted once.
        unsafe { libc::timer_delete(self.timer) };
    }
}

/// A timerfd firing periodically at absolute times; read() blocks until an expiry.
pub struct TimerFd {
    fd: libc::c_int,
    clock: Clock,
    interval_ns: u64,
}

impl TimerFd {
    pub fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        // SAFETY: plain syscall.
        let fd = check(unsafe { libc::timerfd_create(clock.id(), libc::TFD_CLOEXEC) })?;
        Ok(TimerFd {
            fd,
            clock,
            interval_ns,
        })
    }
}

impl TimerFd {
    /// Arms the timer; this also discards the expirations not yet read.
    fn settime(&self, spec: &libc::itimerspec) -> io::Result<()> {
        // SAFETY: valid fd and itimerspec.
        check(unsafe {
            libc::timerfd_settime(self.fd, libc::TFD_TIMER_ABSTIME, spec, std::ptr::null_mut())
        })
        .map(drop)
    }
}

impl Waker for TimerFd {
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        let (first, spec) = periodic_spec(self.clock, planned_ns, self.interval_ns);
        self.settime(&spec)?;
        Ok(first)
    }

    /// The kernel moves a timerfd on in read(): read before a grid point that the loop then
    /// skips, the timer still expires at it. Re-arming at the loop's next due time discards
    /// that expiration (absolute: a time that passed meanwhile fires at once and is measured
    /// against that time).
    fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
        self.settime(&absolute_spec(next_due_ns, self.interval_ns))
    }

    fn wait(&mut self, _due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let mut expirations = 0u64;
        loop {
            // SAFETY: reads 8 bytes into a u64.
            let n = unsafe {
                libc::read(
                    self.fd,
                    &mut expirations as *mut u64 as *mut libc::c_void,
                    8,
                )
            };
            if n == 8 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
            resume_unless_stopped(stop)?;
        }
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: fd is owned.
        unsafe { libc::close(self.fd) };
    }
}

/// Periodic interrupts from /dev/rtc (the MontaVista Jitter Benchmark): read() blocks until
/// the next interrupt. The RTC's crystal is not the system clock, so the grid is anchored at the
/// first interrupt and advanced by the period; see the user guide for what that implies.
pub struct RtcPeriodic {
    fd: libc::c_int,
    clock: Clock,
    interval_ns: u64,
}

/// RTC ioctls from include/uapi/linux/rtc.h. RTC_IRQP_SET is _IOW('p', 0x0c, unsigned long):
/// its number encodes the argument's size, which differs between 32- and 64-bit boards.
const RTC_IRQP_SET: libc::c_ulong = 0x4000_0000
    | ((std::mem::size_of::<libc::c_ulong>() as libc::c_ulong) << 16)
    | (0x70 << 8)
    | 0x0c;
const RTC_PIE_ON: libc::c_ulong = 0x7005;
const RTC_PIE_OFF: libc::c_ulong = 0x7006;

/// The path of the RTC device.
pub const RTC_DEVICE: &str = "/dev/rtc";

impl RtcPeriodic {
    /// Opens the RTC and programs its periodic rate (1 s / interval, a power of two).
    pub fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        let path = std::ffi::CString::new(RTC_DEVICE).expect("no NUL in path");
        // SAFETY: valid C string.
        let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })?;
        // The plan admits only intervals of exactly 1 s / rate (rounded down to whole ns).
        let rate_hz = (1_000_000_000 / interval_ns) as libc::c_ulong;
        // SAFETY: valid fd; ioctls with integer arguments.
        let programmed = unsafe { libc::ioctl(fd, RTC_IRQP_SET, rate_hz) } >= 0
            && unsafe { libc::ioctl(fd, RTC_PIE_ON, 0) } >= 0;
        if !programmed {
            let e = io::Error::last_os_error();
            // SAFETY: fd is owned.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        Ok(RtcPeriodic {
            fd,
            clock,
            interval_ns,
        })
    }

    fn read_interrupt(&mut self, stop: &AtomicBool) -> io::Result<()> {
        let mut data: libc::c_ulong = 0;
        loop {
            // SAFETY: reads one unsigned long, as the RTC driver returns.
            let n = unsafe {
                libc::read(
                    self.fd,
                    &mut data as *mut libc::c_ulong as *mut libc::c_void,
                    std::mem::size_of::<libc::c_ulong>(),
                )
            };
            if n > 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
            resume_unless_stopped(stop)?;
        }
    }
}

impl Waker for RtcPeriodic {
    fn first_due_ns(&mut self, _planned_ns: u64) -> io::Result<u64> {
        self.read_interrupt(&AtomicBool::new(false))?;
        Ok(self.clock.now_ns() + self.interval_ns)
    }

    fn wait(&mut self, _due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        self.read_interrupt(stop)
    }

    /// The RTC's grid cannot be moved. An interrupt for a skipped grid point that is already
    /// pending is read away, so that it does not wake the next wait early.
    fn skipped_to(&mut self, _next_due_ns: u64) -> io::Result<()> {
        let mut fds = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; zero timeout.
        if unsafe { libc::poll(&mut fds, 1, 0) } > 0 && fds.revents & libc::POLLIN != 0 {
            self.read_interrupt(&AtomicBool::new(false))?;
        }
        Ok(())
    }
}

impl Drop for RtcPeriodic {
    fn drop(&mut self) {
        // SAFETY: fd is owned.
        unsafe {
            libc::ioctl(self.fd, RTC_PIE_OFF, 0);
            libc::close(self.fd);
        }
    }
}
