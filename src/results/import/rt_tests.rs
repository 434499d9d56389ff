//! What the rt-tests tools (cyclictest, oslat) have in common: their JSON header, their
//! per-thread objects, their command-line options and their time stamps.

use std::time::{Duration, SystemTime};

/// Opens the JSON file of an rt-tests tool (cyclictest, oslat): parses it and returns it with
/// the tool's command line, after checking that `tool` wrote it.
pub(crate) fn rt_tests_json(
    text: &str,
    tool: &str,
) -> std::result::Result<(serde_json::Value, Vec<String>), String> {
    use serde_json::Value;
    let v: Value = parse_json(text)?;
    // rt-tests has written file_version 1 since its JSON output began; a later one may mean
    // other things by the same fields.
    if let Some(version) = v.get("file_version").filter(|f| f.as_u64() != Some(1)) {
        return Err(format!(
            "it is file_version {version}, a version of the rt-tests JSON format this jitterlab does not know (it reads file_version 1); import it with a jitterlab that reads it, or convert it"
        ));
    }
    let command_line: Vec<String> = v
        .get("cmdline:")
        .or_else(|| v.get("cmdline"))
        .and_then(Value::as_str)
        .map(|c| c.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    if let Some(first) = command_line.first()
        && first.rsplit('/').next() != Some(tool)
    {
        return Err(format!("it was written by '{first}', not {tool}"));
    }
    Ok((v, command_line))
}

/// The JSON object in `text`: from the first line that starts with `{` (a prompt or command
/// pasted before it is skipped) to its end (text after it, a prompt, is ignored; a second JSON
/// document is refused: which of two runs to import cannot be guessed). cyclictest writes a
/// thread that never ran as `"avg": -nan` (C's printf of NaN), which is no JSON: such values
/// are read as null. An object with a key twice is refused (see `Strict`).
pub(crate) fn parse_json(text: &str) -> std::result::Result<serde_json::Value, String> {
    let start = text
        .lines()
        .find(|l| l.trim_start().starts_with('{'))
        .map_or(0, |l| l.as_ptr() as usize - text.as_ptr() as usize);
    let first = |t: &str| -> std::result::Result<serde_json::Value, String> {
        let mut values = serde_json::Deserializer::from_str(t).into_iter::<Strict>();
        let value = match values.next() {
            Some(v) => v.map_err(|e| format!("it is not valid JSON ({e})"))?.0,
            None => serde_json::from_str("").map_err(|e| format!("it is not valid JSON ({e})"))?,
        };
        let rest = &t[values.byte_offset()..];
        let after = rest.trim_start();
        if after.starts_with(['{', '[']) {
            let line = t[..t.len() - after.len()].lines().count();
            return Err(format!(
                "it holds trailing data: a second JSON document starts at line {} of the JSON; import one document per file",
                line.max(1)
            ));
        }
        Ok(value)
    };
    let text = &text[start..];
    first(text).or_else(|e| {
        let unnan =
            ["-nan", "nan", "-NaN", "NaN", "-inf", "inf"]
                .iter()
                .fold(text.to_string(), |t, n| {
                    t.replace(&format!(": {n},"), ": null,")
                        .replace(&format!(": {n}\n"), ": null\n")
                        .replace(&format!(":{n},"), ":null,")
                });
        match first(&unnan) {
            // Not NaN that made it invalid: the first error says what did.
            Err(_) if unnan == text => Err(e),
            Err(e2) if !e2.starts_with("it is not valid JSON") => Err(e2),
            r => r.map_err(|_| e),
        }
    })
}

/// A JSON value read refusing an object that has a key twice: serde_json keeps the last in
/// silence, so which of two figures is imported would depend on their order in the file.
struct Strict(serde_json::Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(out.into())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key \"{key}\" in one object: which value is meant cannot be told"
                )));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(out.into())
    }
}

/// The per-thread objects of an rt-tests JSON file (`"thread": {"0": {...}, "1": {...}}`), in
/// thread order.
pub(crate) fn rt_tests_threads(
    v: &serde_json::Value,
) -> std::result::Result<Vec<(usize, &serde_json::Value)>, String> {
    let threads = v
        .get("thread")
        .and_then(serde_json::Value::as_object)
        .ok_or("it has no \"thread\" object")?;
    let mut entries: Vec<(usize, &serde_json::Value)> = threads
        .iter()
        .map(|(k, t)| {
            k.parse::<usize>()
                .map(|i| (i, t))
                .map_err(|_| format!("thread key '{k}' is not a thread number"))
        })
        .collect::<std::result::Result<_, _>>()?;
    entries.sort_by_key(|(i, _)| *i);
    Ok(entries)
}

/// `-h400`, `-h 400`, `--histogram=400`, `--histogram 400` from a command line.
pub(crate) fn option_value(args: &[String], short: &str, long: &str) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == short || a == long {
            return it.next().cloned();
        }
        if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            return Some(v.to_string());
        }
        if short.len() == 2
            && let Some(v) = a.strip_prefix(short)
            && !v.is_empty()
            && !a.starts_with("--")
        {
            return Some(v.to_string());
        }
    }
    None
}

/// The latest time run.json can hold: RFC 3339 has four-digit years (9999-12-31T23:59:59Z).
const LAST_RFC3339_SECS: u64 = 253_402_300_799;

/// `2026-11-22T13:05:23Z`, or None for a time RFC 3339 cannot write (before 1970 here, or
/// after the year 9999).
pub(crate) fn rfc3339(t: SystemTime) -> Option<String> {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    (secs <= LAST_RFC3339_SECS).then(|| humantime::format_rfc3339_seconds(t).to_string())
}

/// An rt-tests time stamp read from `key` of `v`: None when absent; a warning when present
/// but not a time jitterlab reads, so that the run says why `started_utc` is empty.
pub(crate) fn rt_tests_time(
    v: &serde_json::Value,
    key: &str,
    warnings: &mut Vec<String>,
) -> Option<SystemTime> {
    let text = v.get(key)?.as_str()?;
    let t = parse_rt_tests_time(text);
    if t.is_none() {
        warnings.push(format!(
            "{key} '{text}' is not a time jitterlab reads (rt-tests' 'Sun, 22 Nov 2026 13:05:23 +0000', years 1970 to 9999); it is left out"
        ));
    }
    t
}

/// rt-tests' JSON time stamps, e.g. `Sun, 22 Nov 2026 13:05:23 +0000`; None for anything
/// else, including dates RFC 3339 (run.json) cannot hold.
pub(crate) fn parse_rt_tests_time(text: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, clock, zone] = parts.as_slice() else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = clock
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Bounded fields keep the arithmetic below far from overflow.
    let in_range = (1970..=9999).contains(&year)
        && (1..=31).contains(&day)
        && (0..24).contains(h)
        && (0..60).contains(m)
        && (0..=60).contains(s);
    if !in_range {
        return None;
    }
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let zone = zone.strip_prefix(['+', '-'])?;
    if zone.len() != 4 {
        return None;
    }
    let zone: i64 = zone.parse().ok()?;
    let offset = sign * ((zone / 100) * 3600 + (zone % 100) * 60);
    // Days since 1970-01-01 of a proleptic Gregorian date (era arithmetic, 400-year cycles).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + s - offset;
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?);
    rfc3339(t).map(|_| t)
}

/// A cyclictest or oslat duration option (`-D 10m`, `-D5`, plain seconds), ns.
fn duration_option(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let seconds = match unit.to_ascii_lowercase().as_str() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    number.checked_mul(seconds)?.checked_mul(1_000_000_000)
}

/// What a cyclictest command line states: `-p N` (FIFO, cyclictest's policy with a priority,
/// unless `-y/--policy` names another), `-i` (us, 1000 by default), `-m` (mlockall), `-D`.
pub(crate) fn cyclictest_facts(args: &[String]) -> super::RunFacts {
    if args.is_empty() {
        return super::RunFacts::default();
    }
    let priority: i32 = option_value(args, "-p", "--priority")
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let policy = option_value(args, "-y", "--policy")
        .map(|p| p.to_ascii_lowercase())
        .unwrap_or_else(|| if priority > 0 { "fifo" } else { "other" }.into());
    let interval_us: u64 = option_value(args, "-i", "--interval")
        .and_then(|i| i.parse().ok())
        .unwrap_or(1000);
    super::RunFacts {
        policy: Some(policy),
        priority: Some(priority),
        interval_ns: interval_us.checked_mul(1000),
        memory_locked: Some(args.iter().any(|a| a == "--mlockall" || short_flag(a, 'm'))),
        duration_ns: option_value(args, "-D", "--duration").and_then(|d| duration_option(&d)),
    }
}

/// `a` is a cluster of single-letter flags holding `flag` (`-m`, or `-qmu` as rteval writes it).
fn short_flag(a: &str, flag: char) -> bool {
    a.strip_prefix('-').is_some_and(|flags| {
        !flags.starts_with('-')
            && flags.chars().all(|c| c.is_ascii_alphabetic())
            && flags.contains(flag)
    })
}

/// What an oslat command line states: `-f N` (`--rtprio`, SCHED_FIFO N; else SCHED_OTHER),
/// `-D`. Whether it locked its memory is not on its command line: left unknown.
pub(crate) fn oslat_facts(args: &[String]) -> super::RunFacts {
    if args.is_empty() {
        return super::RunFacts::default();
    }
    let rtprio: Option<i32> = option_value(args, "-f", "--rtprio").and_then(|p| p.parse().ok());
    super::RunFacts {
        policy: Some(if rtprio.is_some() { "fifo" } else { "other" }.into()),
        priority: Some(rtprio.unwrap_or(0)),
        interval_ns: None,
        memory_locked: None,
        duration_ns: option_value(args, "-D", "--duration").and_then(|d| duration_option(&d)),
    }
}

/// How the oslat that wrote a file rounds its `min` and `max`, by rt-tests release. Every
/// release labels a bucket with its upper end (a gap of g us in row floor(g) + 1, the
/// convention jitterlab records imports in); up to 2.6 the min and max are that label too,
/// but 2.7 ("oslat: convert to nanoseconds correctly") prints them rounded down, 1 us below
/// the row they are in. 2.5 and 2.6 also rounded each gap up before bucketing (the bug that
/// commit fixed), so their rows read up to 1 us high.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OslatRelease {
    /// rt-tests up to 2.4, and jitterlab's drop-in (which prints 2.40's layout).
    UpTo2_4,
    /// 2.5 and 2.6: min and max as the row labels, rows 1 us high.
    Rounded2_5,
    /// 2.7 and later: min and max 1 us below the row labels.
    From2_7,
}

impl OslatRelease {
    /// From the version oslat states (`oslat V 2.70`, JSON `"rt_test_version:": "2.70"`,
    /// printed as `%1.2f`) and, in text, whether `Counter Freq` says `(MHz)` (2.7 and later;
    /// `(Mhz)` before). "2.10" is both 2.1 and 2.10 (`%1.2f` of either): the text's spelling
    /// tells them apart; a JSON file's cannot, and is read as 2.10 (a warning says so).
    pub(crate) fn of(version: Option<&str>, mhz: Option<bool>) -> (OslatRelease, Option<String>) {
        let minor = version
            .and_then(|v| v.trim().strip_prefix("2."))
            .and_then(|m| m.get(..2))
            .and_then(|m| m.parse::<u32>().ok());
        let release = match (minor, mhz) {
            (_, Some(true)) => OslatRelease::From2_7,
            // "2.10" in text with (Mhz) is 2.1; in JSON, taken as 2.10.
            (Some(10), Some(false)) => OslatRelease::UpTo2_4,
            (Some(10), None) => OslatRelease::From2_7,
            (Some(0..=49), _) => OslatRelease::UpTo2_4,
            (Some(50..=69), _) => OslatRelease::Rounded2_5,
            (Some(_), _) => OslatRelease::From2_7,
            (None, _) => OslatRelease::UpTo2_4,
        };
        let ambiguous = (minor == Some(10) && mhz.is_none()).then(|| {
            "the file says rt-tests \"2.10\", which is how both 2.1 and 2.10 print their version: read as 2.10 (min and max 1 us up, to their rows); import the text output, whose (MHz) or (Mhz) tells them apart, if this was 2.1".to_string()
        });
        (release, ambiguous)
    }

    /// `[min, avg, max]` in the rows' convention, and what was done, for the warnings.
    pub(crate) fn figures(
        self,
        [min, avg, max]: [Option<f64>; 3],
    ) -> ([Option<f64>; 3], Option<String>) {
        match self {
            OslatRelease::UpTo2_4 => ([min, avg, max], None),
            OslatRelease::Rounded2_5 => ([min, avg, max], Some("written by oslat of rt-tests 2.5 or 2.6, which rounded each gap up before putting it in a row (fixed in 2.7): its rows, min and max read up to 1 us high, and are imported as printed".into())),
            OslatRelease::From2_7 => ([min.map(|m| m + 1.0), avg, max.map(|m| m + 1.0)], Some("written by oslat of rt-tests 2.7 or later, which prints Minimum and Maximum rounded down, 1 us below the row they are in: min_ns and max_ns are those plus 1 us, in the rows' convention (a gap of g us in row floor(g) + 1, as oslat up to 2.6 printed them too)".into())),
        }
    }
}

/// The warning every oslat import carries.
pub(crate) const OSLAT_WARNING: &str = "oslat records every pass of its busy loop, not only gaps above a threshold: each sample is one loop gap in whole us rounded up (oslat's buckets), iterations are the samples, and the noise time, share and gap rate are absent";

/// One oslat thread, a noise run's CPU, from its histogram rows `(k us, count)` as oslat
/// prints them (JSON or text), its `[min, avg, max]` (us) and its duration: a gap of g us is in
/// row floor(g) + 1, and the row at `last_bucket` (`-b`, 32 by default) also holds every longer
/// gap, so it becomes the overflow. oslat counts every loop pass, so the samples are the loop
/// iterations and the duration is the time measured; there is no threshold, so no noise time.
pub(crate) fn oslat_thread(
    cpu: usize,
    rows: Vec<(u64, u64)>,
    last_bucket: u64,
    [min, mean, max]: [Option<f64>; 3],
    duration_ns: Option<u64>,
) -> std::result::Result<super::SourceThread, String> {
    let mut buckets = Vec::new();
    let mut overflow = 0;
    for (us, c) in rows {
        if us >= last_bucket {
            // The last bucket: this many us, or more (oslat's "including overflows").
            overflow = super::add_counts([overflow, c])?;
        } else {
            buckets.push((us, c));
        }
    }
    buckets.sort_unstable();
    let iterations = super::add_counts(buckets.iter().map(|&(_, c)| c).chain([overflow]))?;
    Ok(super::SourceThread {
        noise: Some(super::SourceNoise {
            measured_ns: duration_ns,
            iterations: Some(iterations),
            ..super::SourceNoise::default()
        }),
        ..super::SourceThread::new(
            cpu,
            super::SourceHistogram {
                unit_ns: 1000,
                buckets,
                overflow,
                overflow_from: last_bucket,
                count: None,
                min,
                mean,
                max,
                quantiles: Vec::new(),
                stddev: None,
            },
        )
    })
}

/// Seconds as a tool printed them, in ns; None for what is no run's length (negative, not a
/// number, beyond u64 ns = 584 years).
pub(crate) fn seconds_to_ns(seconds: f64) -> Option<u64> {
    Some((seconds * 1e9).round())
        .filter(|ns| (0.0..u64::MAX as f64).contains(ns))
        .map(|ns| ns as u64)
}

/// What is wrong with one entry of a JSON histogram object, for each format to word in its
/// own terms.
pub(crate) enum BadBucket {
    /// The key is not a whole number.
    Key,
    /// The count is not an integer.
    Count,
    /// The bucket is at or beyond the histogram's end, which the format states.
    BeyondEnd(u64),
}

impl BadBucket {
    /// The words of the formats whose keys are bucket numbers (oslat, jitterdebugger);
    /// `BeyondEnd` is each format's own.
    pub(crate) fn of_bucket_number(&self, key: &str) -> String {
        match self {
            BadBucket::Key => format!("histogram key '{key}' is not a bucket number"),
            BadBucket::Count => format!("the count of bucket {key} is not an integer"),
            BadBucket::BeyondEnd(end) => format!("bucket {key} is at or beyond {end}"),
        }
    }
}

/// The `"value": count` entries of a JSON histogram object (cyclictest, oslat and
/// jitterdebugger write their histograms so), in the object's order; values at or above `end`
/// are refused when the format has one. The first bad entry is refused, worded by `bad`.
pub(crate) fn json_buckets(
    h: &serde_json::Map<String, serde_json::Value>,
    end: Option<u64>,
    bad: impl Fn(BadBucket, &str) -> String,
) -> std::result::Result<Vec<(u64, u64)>, String> {
    let mut buckets = Vec::with_capacity(h.len());
    for (k, c) in h {
        let value: u64 = k.parse().map_err(|_| bad(BadBucket::Key, k))?;
        let c = c.as_u64().ok_or_else(|| bad(BadBucket::Count, k))?;
        if let Some(end) = end.filter(|&end| value >= end) {
            return Err(bad(BadBucket::BeyondEnd(end), k));
        }
        buckets.push((value, c));
    }
    Ok(buckets)
}
