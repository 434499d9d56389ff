//! Issue 39 R17 for every command that measures: a SIGINT that came while the handlers were
//! being installed (with SIGINT blocked) is taken once they are in, and the command stops at
//! once instead of running its whole length (a monitor ran on for 20 s). Reproduced every
//! time by starting jitterlab with SIGINT pending and blocked (`common::signals`): before
//! the fix nothing unblocked it and each command ran until the hard kill.

use crate::common;

use common::signals::with_sigint_pending;
use common::*;
use std::time::Duration;

#[test]
fn a_sigint_pending_at_the_start_stops_every_measuring_command_at_once() {
    if !realtime_available("a_sigint_pending_at_the_start_stops_every_measuring_command_at_once") {
        return;
    }
    let _x = exclusive();
    let base = tempfile::tempdir().unwrap();
    let out = |name: &str| base.path().join(name).to_str().unwrap().to_string();
    let (run, noise, monitor, sweep) = (out("run"), out("noise"), out("monitor"), out("sweep"));
    let commands: Vec<Vec<&str>> = vec![
        vec!["run", "-D", "30s", "--cpus", "0", "-q", "--out", &run],
        vec!["noise", "-D", "30s", "--cpus", "0", "-q", "--out", &noise],
        vec![
            "monitor",
            "--cpus",
            "0",
            "--listen",
            "127.0.0.1:0",
            "-q",
            "--out",
            &monitor,
        ],
        vec![
            "sweep",
            "--load",
            "cpu:workers={}",
            "--levels",
            "1,2",
            "--duration",
            "15s",
            "--cpus",
            "0",
            "-q",
            "--out",
            &sweep,
        ],
        vec!["load", "cpu:workers=1", "--duration", "30s"],
        vec!["cyclictest", "-D", "30", "-q"],
        vec!["oslat", "-D", "30", "-c", "0"],
        vec!["timerlat", "hist", "-c", "0", "-d", "30"],
    ];
    for args in &commands {
        let (took, o) = with_sigint_pending(args, Duration::from_secs(40));
        eprintln!(
            "{} with SIGINT pending at its start ended after {took:?}",
            args[0]
        );
        assert!(
            took < Duration::from_secs(10),
            "{args:?} ran on for {took:?} with a SIGINT pending: {}",
            text(&o)
        );
        // Not killed, nor refused: a refusal would end it as fast without testing anything.
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{args:?}: {:?}: {}",
            o.status,
            text(&o)
        );
    }
    for dir in [&run, &noise] {
        let r = run_json(std::path::Path::new(dir));
        assert_eq!(r["ended"], "interrupted", "{dir}");
    }
}
