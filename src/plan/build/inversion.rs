//! `--hold`, `--hog` and `--no-pi` to an [`InversionSpec`] for `--wake pi-mutex`; refused with
//! any other method.

use crate::error::{Failure, Result};
use crate::measure::wake::inversion::INVERSION_MARGIN_NS;
use crate::measure::{PolicyKind, WakeMethod};
use crate::plan::InversionSpec;
use crate::plan::options::InversionOptions;
use crate::units::{format_ns, parse_duration_ns};

/// The wake method that runs the scenario.
pub(crate) const PI_MUTEX: &str = "pi-mutex";
pub(crate) const DEFAULT_HOLD_NS: u64 = 200_000;
pub(crate) const DEFAULT_HOG_NS: u64 = 500_000;

/// The scenario of a run of `wake` under `policy` at the measuring threads' `priority`, with
/// `interval_ns` between due times.
pub(crate) fn resolve_inversion(
    args: &InversionOptions,
    wake: &WakeMethod,
    policy: PolicyKind,
    priority: i32,
    interval_ns: u64,
) -> Result<Option<InversionSpec>> {
    if wake.name != PI_MUTEX {
        let given = [
            args.hold.as_ref().map(|_| "--hold"),
            args.hog.as_ref().map(|_| "--hog"),
            args.no_pi.then_some("--no-pi"),
        ];
        if let Some(flag) = given.into_iter().flatten().next() {
            return Err(Failure::usage(format!(
                "{flag}: applies to --wake {PI_MUTEX} (the priority-inversion scenario), not --wake {}",
                wake.name
            )));
        }
        return Ok(None);
    }
    if !matches!(policy, PolicyKind::Fifo | PolicyKind::Rr) {
        return Err(Failure::usage(format!(
            "--wake {PI_MUTEX} with --policy {}: priority inversion needs three real-time priorities on one CPU; use --policy fifo or rr",
            policy.name()
        )));
    }
    if priority < 3 {
        return Err(Failure::usage(format!(
            "--wake {PI_MUTEX} with --priority {priority}: the hog runs at priority {} and the holder at {}, both at least 1; use --priority 3 or more",
            priority - 1,
            priority - 2
        )));
    }
    let duration = |flag: &str, text: &Option<String>, default: u64| -> Result<u64> {
        let Some(text) = text else {
            return Ok(default);
        };
        match parse_duration_ns(text) {
            Ok(0) => Err(Failure::usage(format!("{flag} 0: must be above 0"))),
            Ok(ns) => Ok(ns),
            Err(e) => Err(Failure::usage(format!("{flag}: {e}"))),
        }
    };
    let hold_ns = duration("--hold", &args.hold, DEFAULT_HOLD_NS)?;
    let hog_ns = duration("--hog", &args.hog, DEFAULT_HOG_NS)?;
    // Each cycle's hold and hog run must be over before the next hold begins.
    let needed = hold_ns
        .saturating_add(hog_ns)
        .saturating_add(INVERSION_MARGIN_NS);
    if interval_ns <= needed {
        return Err(Failure::usage(format!(
            "--wake {PI_MUTEX}: --interval {} leaves no room for the hold ({}) and the hog's run ({}) of each cycle; use an interval above {} (e.g. --interval {}ms), or a shorter --hold or --hog",
            format_ns(interval_ns),
            format_ns(hold_ns),
            format_ns(hog_ns),
            format_ns(needed),
            needed.div_ceil(1_000_000).saturating_mul(2),
        )));
    }
    Ok(Some(InversionSpec {
        hold_ns,
        hog_ns,
        inherit: !args.no_pi,
        holder_priority: priority - 2,
        hog_priority: priority - 1,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(hold: Option<&str>, hog: Option<&str>, no_pi: bool) -> InversionOptions {
        InversionOptions {
            hold: hold.map(String::from),
            hog: hog.map(String::from),
            no_pi,
        }
    }

    fn resolve(
        a: InversionOptions,
        wake: &str,
        policy: PolicyKind,
        prio: i32,
        interval: u64,
    ) -> Result<Option<InversionSpec>> {
        resolve_inversion(&a, WakeMethod::named(wake).unwrap(), policy, prio, interval)
    }

    #[test]
    fn defaults_fit_a_millisecond_and_sit_below_the_measuring_thread() {
        let spec = resolve(
            args(None, None, false),
            PI_MUTEX,
            PolicyKind::Fifo,
            95,
            1_000_000,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            spec,
            InversionSpec {
                hold_ns: 200_000,
                hog_ns: 500_000,
                inherit: true,
                holder_priority: 93,
                hog_priority: 94,
            }
        );
        let plain = resolve(
            args(Some("1ms"), Some("3ms"), true),
            PI_MUTEX,
            PolicyKind::Rr,
            50,
            10_000_000,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (plain.hold_ns, plain.hog_ns, plain.inherit),
            (1_000_000, 3_000_000, false)
        );
        assert_eq!(
            resolve(
                args(None, None, false),
                "mq",
                PolicyKind::Fifo,
                95,
                1_000_000
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn refusals_name_the_option_and_the_fix() {
        let err = |a, wake, policy, prio, interval| {
            resolve(a, wake, policy, prio, interval)
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(
                args(Some("1ms"), None, false),
                "mq",
                PolicyKind::Fifo,
                95,
                1_000_000
            )
            .contains("--hold: applies to --wake pi-mutex")
        );
        assert!(
            err(
                args(None, None, true),
                "clock-nanosleep",
                PolicyKind::Fifo,
                95,
                1_000_000
            )
            .contains("--no-pi")
        );
        assert!(
            err(
                args(None, None, false),
                PI_MUTEX,
                PolicyKind::Other,
                0,
                1_000_000
            )
            .contains("use --policy fifo or rr")
        );
        assert!(
            err(
                args(None, None, false),
                PI_MUTEX,
                PolicyKind::Fifo,
                2,
                1_000_000
            )
            .contains("--priority 3 or more")
        );
        assert!(
            err(
                args(Some("0us"), None, false),
                PI_MUTEX,
                PolicyKind::Fifo,
                95,
                1_000_000
            )
            .contains("--hold 0")
        );
        assert!(
            err(
                args(Some("x"), None, false),
                PI_MUTEX,
                PolicyKind::Fifo,
                95,
                1_000_000
            )
            .contains("--hold:")
        );
        let room = err(
            args(Some("500us"), Some("3ms"), false),
            PI_MUTEX,
            PolicyKind::Fifo,
            95,
            1_000_000,
        );
        assert!(
            room.contains("no room") && room.contains("--interval 8ms"),
            "{room}"
        );
    }
}
