//! `rtc`: periodic interrupts of /dev/rtc (the MontaVista Jitter Benchmark).

use super::syscall::resume_unless_stopped;
use crate::measure::clock::Clock;
use crate::measure::waker::{MakeWaker, Waker};
use crate::sys::errno::EINTR;
use crate::sys::file;
use crate::sys::ioctl::{self, Request};
use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::atomic::AtomicBool;

/// The path of the RTC device.
pub(crate) const RTC_DEVICE: &str = "/dev/rtc";

/// RTC ioctls from include/uapi/linux/rtc.h. RTC_IRQP_SET is _IOW('p', 0x0c, unsigned long):
/// its number encodes the argument's size, which differs between 32- and 64-bit boards.
const RTC_IRQP_SET: Request = Request::write(b'p', 0x0c, std::mem::size_of::<ioctl::Ulong>());
const RTC_PIE_ON: Request = Request::none(b'p', 0x05);
const RTC_PIE_OFF: Request = Request::none(b'p', 0x06);

/// The RTC ticks at a power-of-two rate from 2 to 8192 Hz; the kernel's period is 1 s / rate
/// in whole ns. Only intervals of exactly that length are accepted.
pub(crate) fn check_interval(interval_ns: u64) -> Result<(), String> {
    let rate = 1_000_000_000 / interval_ns;
    if !rate.is_power_of_two() || !(2..=8192).contains(&rate) || 1_000_000_000 / rate != interval_ns
    {
        return Err(format!(
            "--interval {interval_ns}ns: --wake rtc needs 1 s divided by a power-of-two rate from 2 to 8192 Hz, \
             in whole ns (1ms is 1000 Hz, not a power of two; use 976562ns for 1024 Hz or 488281ns for 2048 Hz)"
        ));
    }
    Ok(())
}

/// Periodic interrupts from /dev/rtc: read() blocks until the next interrupt. The RTC's crystal
/// is not the system clock, so the grid is anchored at the first interrupt and advanced by the
/// period; see the user guide for what that implies.
pub(crate) struct RtcPeriodic {
    fd: RawFd,
    clock: Clock,
    interval_ns: u64,
}

impl RtcPeriodic {
    /// Opens the RTC and programs its periodic rate (1 s / interval, a power of two).
    pub(crate) fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        let path = std::ffi::CString::new(RTC_DEVICE).expect("no NUL in path");
        let fd = file::open_read_only(&path)?;
        // The plan admits only intervals of exactly 1 s / rate (rounded down to whole ns).
        let rate_hz = (1_000_000_000 / interval_ns) as ioctl::Ulong;
        // SAFETY: fd is open and owned by this function until returned.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let programmed = ioctl::with_ulong(borrowed, RTC_IRQP_SET, rate_hz)
            .and_then(|_| ioctl::with_ulong(borrowed, RTC_PIE_ON, 0));
        if let Err(e) = programmed {
            file::close(fd);
            return Err(e);
        }
        Ok(RtcPeriodic {
            fd,
            clock,
            interval_ns,
        })
    }

    fn read_interrupt(&mut self, stop: &AtomicBool) -> io::Result<()> {
        // One unsigned long, as the RTC driver returns.
        let mut data = [0u8; std::mem::size_of::<ioctl::Ulong>()];
        loop {
            let n = file::read_raw(self.fd, &mut data);
            if n > 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(EINTR) {
                return Err(e);
            }
            resume_unless_stopped(stop)?;
        }
    }
}

impl MakeWaker for RtcPeriodic {
    fn make(clock: Clock, interval_ns: u64) -> Result<Self, String> {
        RtcPeriodic::new(clock, interval_ns)
            .map_err(|e| format!("cannot program periodic interrupts on {RTC_DEVICE}: {e}"))
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
        if let Ok(Some(true)) = file::poll_input(self.fd, 0) {
            self.read_interrupt(&AtomicBool::new(false))?;
        }
        Ok(())
    }
}

impl Drop for RtcPeriodic {
    fn drop(&mut self) {
        // SAFETY: fd is owned and open until the close below.
        let _ = ioctl::with_ulong(unsafe { BorrowedFd::borrow_raw(self.fd) }, RTC_PIE_OFF, 0);
        file::close(self.fd);
    }
}
