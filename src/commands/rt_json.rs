//! The header every rt-tests 2.x `--json=FILE` file starts with (its `rt_write_json`), shared
//! by the drop-ins' JSON files (`cyclictest::json`, `oslat::json`): file_version 1, the command
//! line under the key `"cmdline:"` with its colon, as rt-tests spells it, the version, the
//! times, the return code, uname and whether the kernel is PREEMPT_RT. Strings are escaped as
//! JSON (rt-tests writes them raw; the two agree for every ordinary string).

use std::fmt::Write;
use std::time::SystemTime;

/// What the header says of the run and the system.
#[derive(Debug, Clone)]
pub struct Header {
    /// The tool and its options, as its command line (`cyclictest -q -h 400`).
    pub command_line: String,
    /// `rt_test_version:`: `jitterlab VERSION`, as `export --format cyclictest-json` writes it
    /// (no parser known reads it; a claim to be rt-tests would be false).
    pub version: String,
    pub start: SystemTime,
    pub end: SystemTime,
    pub return_code: i32,
    pub uname: crate::sys::host::Uname,
    pub realtime: bool,
}

impl Header {
    /// The header of a run of `tool` with `args` from `start` to `end`, on this system.
    pub(crate) fn of_this_run(
        tool: &str,
        args: &[String],
        (start, end): (SystemTime, SystemTime),
    ) -> Self {
        Header {
            command_line: std::iter::once(tool)
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            version: format!("jitterlab {}", env!("CARGO_PKG_VERSION")),
            start,
            end,
            return_code: 0,
            uname: crate::sys::host::uname(),
            realtime: std::fs::read_to_string("/sys/kernel/realtime")
                .is_ok_and(|s| s.trim() == "1"),
        }
    }
}

/// The file's opening brace and the header's lines, up to and including the `sysinfo` object
/// (each tool's `num_threads` and threads follow).
pub fn header(header: &Header) -> String {
    let q = |s: &str| serde_json::to_string(s).expect("strings serialise");
    let mut f = String::from("{\n");
    let _ = writeln!(f, "  \"file_version\": 1,");
    let _ = writeln!(f, "  \"cmdline:\": {},", q(&header.command_line));
    let _ = writeln!(f, "  \"rt_test_version:\": {},", q(&header.version));
    let _ = writeln!(f, "  \"start_time\": {},", q(&rt_tests_time(header.start)));
    let _ = writeln!(f, "  \"end_time\": {},", q(&rt_tests_time(header.end)));
    let _ = writeln!(f, "  \"return_code\": {},", header.return_code);
    f += "  \"sysinfo\": {\n";
    let u = &header.uname;
    let _ = writeln!(f, "    \"sysname\": {},", q(&u.sysname));
    let _ = writeln!(f, "    \"nodename\": {},", q(&u.nodename));
    let _ = writeln!(f, "    \"release\": {},", q(&u.release));
    let _ = writeln!(f, "    \"version\": {},", q(&u.version));
    let _ = writeln!(f, "    \"machine\": {},", q(&u.machine));
    let _ = writeln!(f, "    \"realtime\": {}", u8::from(header.realtime));
    f += "  },\n";
    f
}

/// rt-tests' time stamp, in UTC: `Thu, 26 Nov 2026 20:17:31 +0000`, as
/// `export --format cyclictest-json` writes it (one place for the date arithmetic); a time
/// before 1970 (a clock set wrong) is written as the epoch.
pub(crate) fn rt_tests_time(t: SystemTime) -> String {
    crate::report::export::cyclictest_json::rfc2822(t)
        .unwrap_or_else(|| "Thu, 01 Jan 1970 00:00:00 +0000".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_as_rt_tests_writes_them() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_724_251);
        assert_eq!(rt_tests_time(t), "Thu, 26 Nov 2026 20:17:31 +0000");
        assert_eq!(
            rt_tests_time(SystemTime::UNIX_EPOCH),
            "Thu, 01 Jan 1970 00:00:00 +0000"
        );
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rt_tests_time(leap), "Tue, 29 Feb 2000 00:00:00 +0000");
    }
}
