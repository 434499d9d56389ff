//! The late start of `session::start` (the gate opened after the first due time).

use super::*;

#[test]
fn a_gate_opened_before_the_first_due_time_is_not_a_late_start() {
    assert_eq!(late_start(1_000_000_000, 950_000_000, 20_000_000), None);
    assert_eq!(late_start(1_000_000_000, 1_000_000_000, 20_000_000), None);
}

#[test]
fn a_gate_opened_after_the_first_due_time_says_by_how_much_and_whose_it_is() {
    // Check 7 of the lab: 16 emulated CPUs, the gate opened 4.15 s after the start.
    let w = late_start(1_000_000_000, 5_150_000_000, 20_000_000).unwrap();
    assert!(
        w.contains("released 4.15 s after their first due time"),
        "{w}"
    );
    assert!(w.contains("not the system's latency"), "{w}");
}

#[test]
fn a_late_start_names_the_lead_in_it_outlasted() {
    let w = late_start(1_000_000_000, 1_002_000_000, 20_200_000).unwrap();
    assert!(w.contains("outlasted its 20.20 ms lead-in"), "{w}");
}
