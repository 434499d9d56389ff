//! The noise loop's clock (`noise --clock`): CLOCK_MONOTONIC through the vDSO, or the CPU's
//! own counter ([`crate::sys::counter`]: the TSC, CNTVCT) read directly, as oslat reads the
//! TSC. The counter costs one instruction pair instead of a vDSO call, so the loop is as tight
//! as oslat's; its ticks are converted to CLOCK_MONOTONIC only for a gap, so every time the
//! run writes (gap starts and lengths in the sample log, the interval log, the trace
//! attribution) stays on the clock of everything else.
//!
//! The conversion is linear, from an anchor (a counter read and a CLOCK_MONOTONIC read taken
//! together) and a rate. The first two anchors are taken before the run ([`calibrate`]); the
//! loop takes more off its hot path (every [`super::noise::PUBLISH_EVERY`] iterations at most,
//! when the next one is due, see [`Calibration::maybe_recalibrate`]): at twice the calibrated
//! span, then every [`RECALIBRATE_EVERY_NS`], each giving the rate over the whole span since the
//! first anchor and moving the anchor to now. CLOCK_MONOTONIC is itself the counter scaled by
//! the kernel (and slewed by NTP), so between two anchors the conversion's error is the rate's
//! error over at most a second; each recalibration measures it (`largest_correction_ns` in
//! run.json), docs/noise.md gives the figures.

use super::clock::monotonic_ns;
use crate::sys::counter;

/// How long [`calibrate`] spins between its two anchors, ns. The rate's first error is about
/// the anchors' own (tens of ns) over this span; the recalibrations soon lengthen it.
pub(crate) const CALIBRATION_NS: u64 = 10_000_000;
/// The longest time between two recalibrations once the calibrated span is long, ns.
pub(crate) const RECALIBRATE_EVERY_NS: u64 = 1_000_000_000;
/// Fixed-point bits of the rate (ns per tick × 2^52): 2.2e-16 ns per tick, below a ns in an
/// hour of extrapolation at 1 GHz; ns per tick below 4096 fits in 64 bits (a 250 kHz counter).
const RATE_SHIFT: u32 = 52;

/// What the loop reads: `noise --clock`, resolved for this system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoiseClock {
    /// CLOCK_MONOTONIC through the vDSO: ticks are ns.
    #[default]
    Monotonic,
    /// The CPU's counter ([`counter::COUNTER_NAME`]), calibrated against CLOCK_MONOTONIC.
    Counter,
}

impl NoiseClock {
    /// The name run.json and `--clock` give it: `monotonic`, `tsc` or `cntvct`.
    pub fn name(self) -> &'static str {
        match self {
            NoiseClock::Monotonic => "monotonic",
            NoiseClock::Counter => counter::COUNTER_NAME.unwrap_or("counter"),
        }
    }

    /// `--clock auto|tsc|cntvct|monotonic` on this system: `auto` takes the counter where the
    /// kernel trusts it, else CLOCK_MONOTONIC; naming the counter where it cannot be trusted is
    /// refused with the reason (Err). None: not a clock name.
    pub fn resolve(choice: &str) -> Option<Result<NoiseClock, String>> {
        match choice {
            "monotonic" => Some(Ok(NoiseClock::Monotonic)),
            "auto" => Some(Ok(match counter::kernel_trusts_counter() {
                Ok(()) => NoiseClock::Counter,
                Err(_) => NoiseClock::Monotonic,
            })),
            "tsc" | "cntvct" if counter::COUNTER_NAME == Some(choice) => Some(
                counter::kernel_trusts_counter()
                    .map(|()| NoiseClock::Counter)
                    .map_err(|why| format!("--clock {choice}: {why}; use --clock monotonic")),
            ),
            "tsc" | "cntvct" => Some(Err(format!(
                "--clock {choice}: this CPU ({}) has no {choice} jitterlab can read; use --clock monotonic or auto",
                std::env::consts::ARCH
            ))),
            _ => None,
        }
    }
}

/// A counter read and a CLOCK_MONOTONIC read taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anchor {
    pub(crate) ticks: u64,
    pub ns: u64,
}

/// What the noise loop reads. [`TickSource::ticks`] is its whole per-iteration cost.
pub(crate) trait TickSource {
    /// One read, in ticks.
    fn ticks(&self) -> u64;
    /// A fresh anchor, for ticks that are not CLOCK_MONOTONIC ns already (None for those).
    fn anchor(&self) -> Option<Anchor>;
}

/// CLOCK_MONOTONIC read through the vDSO: ticks are ns, nothing to calibrate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MonotonicTicks;

impl TickSource for MonotonicTicks {
    #[inline(always)]
    fn ticks(&self) -> u64 {
        monotonic_ns()
    }
    fn anchor(&self) -> Option<Anchor> {
        None
    }
}

/// The CPU's counter, read directly.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CounterTicks;

impl TickSource for CounterTicks {
    #[inline(always)]
    fn ticks(&self) -> u64 {
        counter::read_counter()
    }

    /// The best of three tries: the CLOCK_MONOTONIC read between the two counter reads closest
    /// together, placed at their midpoint (the vDSO read the counter somewhere between them).
    fn anchor(&self) -> Option<Anchor> {
        let mut best: Option<(u64, Anchor)> = None;
        for _ in 0..3 {
            let before = counter::read_counter();
            let ns = monotonic_ns();
            let after = counter::read_counter();
            let spread = after.wrapping_sub(before);
            if best.is_none_or(|(s, _)| spread < s) {
                let ticks = before + spread / 2;
                best = Some((spread, Anchor { ticks, ns }));
            }
        }
        best.map(|(_, a)| a)
    }
}

/// A linear map from ticks to CLOCK_MONOTONIC ns: through `anchor`, at `rate` ns per tick
/// × 2^52.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TickScale {
    anchor: Anchor,
    rate: u64,
}

impl TickScale {
    /// Ticks that are ns already.
    pub(crate) const IDENTITY: TickScale = TickScale {
        anchor: Anchor { ticks: 0, ns: 0 },
        rate: 1 << RATE_SHIFT,
    };

    /// The map through `to` with the rate from `from` to `to` (None if no tick passed).
    pub(crate) fn between(from: Anchor, to: Anchor) -> Option<TickScale> {
        let ticks = to.ticks.checked_sub(from.ticks).filter(|&t| t > 0)?;
        let ns = to.ns.saturating_sub(from.ns) as u128;
        let rate = u64::try_from((ns << RATE_SHIFT) / ticks as u128).ok()?;
        Some(TickScale { anchor: to, rate })
    }

    /// The CLOCK_MONOTONIC time of a read of `ticks`, ns.
    #[inline]
    pub(crate) fn ns_at(&self, ticks: u64) -> u64 {
        if ticks >= self.anchor.ticks {
            self.anchor.ns + self.len_ns(ticks - self.anchor.ticks)
        } else {
            self.anchor
                .ns
                .saturating_sub(self.len_ns(self.anchor.ticks - ticks))
        }
    }

    /// `ticks` of the counter as a length, ns (rounded to the nearest).
    #[inline]
    pub(crate) fn len_ns(&self, ticks: u64) -> u64 {
        let scaled = ticks as u128 * self.rate as u128 + (1u128 << (RATE_SHIFT - 1));
        (scaled >> RATE_SHIFT).min(u64::MAX as u128) as u64
    }

    /// The ticks of a length of `ns` (rounded to the nearest: a gap of more ticks is longer
    /// than `ns` by at least half a tick).
    pub(crate) fn len_ticks(&self, ns: u64) -> u64 {
        let rate = self.rate.max(1) as u128;
        ((((ns as u128) << RATE_SHIFT) + rate / 2) / rate).min(u64::MAX as u128) as u64
    }

    /// The read at CLOCK_MONOTONIC time `ns` (`u64::MAX` stays `u64::MAX`: never).
    pub(crate) fn ticks_at(&self, ns: u64) -> u64 {
        if ns == u64::MAX {
            u64::MAX
        } else if ns >= self.anchor.ns {
            self.anchor
                .ticks
                .saturating_add(self.len_ticks(ns - self.anchor.ns))
        } else {
            self.anchor
                .ticks
                .saturating_sub(self.len_ticks(self.anchor.ns - ns))
        }
    }

    /// The counter's rate, ticks per second.
    pub(crate) fn ticks_per_s(&self) -> f64 {
        1e9 * (1u64 << RATE_SHIFT) as f64 / self.rate.max(1) as f64
    }
}

/// The loop's conversion and its upkeep.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Calibration {
    pub scale: TickScale,
    /// The first anchor: every rate is measured from it.
    first: Anchor,
    /// The tick at or after which the next recalibration is due (`u64::MAX`: never).
    next_ticks: u64,
    /// Recalibrations done in the loop.
    pub(crate) recalibrations: u64,
    /// The largest difference between the converted time and CLOCK_MONOTONIC found at a
    /// recalibration, ns: the conversion's error, the counter's drift included.
    pub(crate) largest_correction_ns: u64,
}

impl Calibration {
    /// For ticks that are ns: nothing to convert or recalibrate.
    pub(crate) const IDENTITY: Calibration = Calibration {
        scale: TickScale::IDENTITY,
        first: Anchor { ticks: 0, ns: 0 },
        next_ticks: u64::MAX,
        recalibrations: 0,
        largest_correction_ns: 0,
    };

    /// From two anchors (`from` before `to`); the first recalibration is due after as long again.
    pub(crate) fn from_anchors(from: Anchor, to: Anchor) -> Option<Calibration> {
        let scale = TickScale::between(from, to)?;
        Some(Calibration {
            scale,
            first: from,
            next_ticks: to.ticks.saturating_add(to.ticks - from.ticks),
            recalibrations: 0,
            largest_correction_ns: 0,
        })
    }

    /// If a recalibration is due at `now` (ticks), takes a fresh anchor from `source` and
    /// moves the map to it, with the rate since the first anchor. Returns whether it did.
    /// Cold: the loop calls it every few thousand iterations.
    #[inline]
    pub(crate) fn maybe_recalibrate<T: TickSource>(&mut self, now: u64, source: &T) -> bool {
        if now < self.next_ticks {
            return false;
        }
        self.recalibrate(source)
    }

    #[cold]
    fn recalibrate<T: TickSource>(&mut self, source: &T) -> bool {
        let Some(anchor) = source.anchor() else {
            self.next_ticks = u64::MAX;
            return false;
        };
        let Some(scale) = TickScale::between(self.first, anchor) else {
            return false;
        };
        let correction = self.scale.ns_at(anchor.ticks).abs_diff(anchor.ns);
        self.largest_correction_ns = self.largest_correction_ns.max(correction);
        self.scale = scale;
        self.recalibrations += 1;
        let since_first = anchor.ticks - self.first.ticks;
        let step = since_first.min(scale.len_ticks(RECALIBRATE_EVERY_NS));
        self.next_ticks = anchor.ticks.saturating_add(step);
        true
    }
}

/// The calibration of `source` before the loop: two anchors [`CALIBRATION_NS`] apart, the
/// thread spinning between them (pinned, as it will measure). Identity for ticks that are ns.
pub(crate) fn calibrate<T: TickSource>(source: &T) -> Calibration {
    let Some(from) = source.anchor() else {
        return Calibration::IDENTITY;
    };
    while monotonic_ns() < from.ns + CALIBRATION_NS {
        std::hint::spin_loop();
    }
    let to = source
        .anchor()
        .expect("a source with anchors gives them every time");
    Calibration::from_anchors(from, to).unwrap_or_else(|| {
        // The counter did not advance in 10 ms: it is broken; the kernel would not trust it.
        panic!("the CPU counter did not advance during calibration ({from:?} -> {to:?})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2.5 GHz counter: 0.4 ns per tick.
    fn scale() -> TickScale {
        let from = Anchor {
            ticks: 1_000,
            ns: 5_000_000,
        };
        let to = Anchor {
            ticks: 1_000 + 25_000_000,
            ns: 15_000_000,
        };
        TickScale::between(from, to).unwrap()
    }

    #[test]
    fn a_known_rate_converts_exactly_both_ways() {
        let s = scale();
        assert!((s.ticks_per_s() - 2.5e9).abs() < 1.0, "{}", s.ticks_per_s());
        assert_eq!(s.ns_at(1_000), 5_000_000);
        assert_eq!(s.ns_at(1_000 + 25_000_000), 15_000_000);
        // An hour after the anchor: exact to the ns.
        assert_eq!(
            s.ns_at(1_000 + 25_000_000 + 9_000_000_000_000),
            15_000_000 + 3_600_000_000_000
        );
        assert_eq!(s.len_ns(2_500), 1_000);
        assert_eq!(s.len_ticks(1_000), 2_500);
        assert_eq!(s.ticks_at(15_000_000 + 1_000), 25_001_000 + 2_500);
        assert_eq!(s.ticks_at(5_000_000), 1_000);
        assert_eq!(s.ticks_at(u64::MAX), u64::MAX);
        assert_eq!(TickScale::IDENTITY.ns_at(123_456), 123_456);
        assert_eq!(TickScale::IDENTITY.len_ticks(1_000), 1_000);
    }

    /// A scripted counter running 100 ppm fast against its first calibration (which is off by
    /// the anchors' error): every recalibration measures the error it corrects, and the
    /// schedule doubles the span up to the cap.
    #[test]
    fn recalibration_follows_a_drifting_rate_and_records_the_correction() {
        use std::cell::Cell;
        struct Drifting {
            ns: Cell<u64>,
        }
        // 1 tick per ns plus 100 ppm.
        impl TickSource for Drifting {
            fn ticks(&self) -> u64 {
                self.ns.get() + self.ns.get() / 10_000
            }
            fn anchor(&self) -> Option<Anchor> {
                Some(Anchor {
                    ticks: self.ticks(),
                    ns: self.ns.get(),
                })
            }
        }
        let src = Drifting { ns: Cell::new(0) };
        // A first calibration believing 1 tick per ns exactly.
        let mut c = Calibration::from_anchors(
            Anchor { ticks: 0, ns: 0 },
            Anchor {
                ticks: 10_000_000,
                ns: 10_000_000,
            },
        )
        .unwrap();
        src.ns.set(19_000_000);
        assert!(!c.maybe_recalibrate(src.ticks(), &src), "not due yet");
        src.ns.set(20_000_000);
        assert!(c.maybe_recalibrate(src.ticks(), &src));
        // At 20 ms, 20 002 000 ticks read as 20 002 000 ns: 2 us off.
        assert_eq!(c.largest_correction_ns, 2_000);
        // Now the rate is the true one: an hour later the conversion is exact within a ns.
        let hour = 3_600_000_000_000u64;
        src.ns.set(hour);
        assert!(src.ns.get().abs_diff(c.scale.ns_at(src.ticks())) <= 1);
        // The schedule: due at twice the span, then at most every second.
        let mut due = Vec::new();
        src.ns.set(20_000_000);
        for ms in 20..5_000u64 {
            src.ns.set(ms * 1_000_000);
            if c.maybe_recalibrate(src.ticks(), &src) {
                due.push(ms);
            }
        }
        // Doubling, then every second (a tick of rounding may put it a ms later).
        assert_eq!(due[..6], [40, 80, 160, 320, 640, 1280], "{due:?}");
        assert!(
            due[5..]
                .windows(2)
                .all(|w| (1_000..=1_001).contains(&(w[1] - w[0]))),
            "{due:?}"
        );
        assert_eq!(due.len(), 9, "{due:?}");
        assert_eq!(c.recalibrations, 10);
    }

    #[test]
    fn the_monotonic_clock_needs_no_calibration() {
        let c = calibrate(&MonotonicTicks);
        assert_eq!(c.scale, TickScale::IDENTITY);
        assert_eq!(
            NoiseClock::resolve("monotonic"),
            Some(Ok(NoiseClock::Monotonic))
        );
        assert_eq!(NoiseClock::resolve("hpet"), None);
    }

    /// Where the kernel trusts the counter (this VM: clocksource tsc), `auto` takes it and its
    /// calibration gives a rate that converts a later read to CLOCK_MONOTONIC within a few us.
    #[test]
    fn auto_takes_a_trusted_counter_and_calibrates_it() {
        let auto = NoiseClock::resolve("auto").unwrap().unwrap();
        if counter::kernel_trusts_counter().is_err() {
            assert_eq!(auto, NoiseClock::Monotonic);
            return;
        }
        assert_eq!(auto, NoiseClock::Counter);
        let c = calibrate(&CounterTicks);
        let rate = c.scale.ticks_per_s();
        assert!((1e6..1e10).contains(&rate), "{rate}");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let a = CounterTicks.anchor().unwrap();
        let error = c.scale.ns_at(a.ticks).abs_diff(a.ns);
        // 30 ms from a 10 ms calibration: the rate's error times three, plus the anchors'.
        assert!(error < 20_000, "converted time off by {error} ns");
    }
}
