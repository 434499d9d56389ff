//! A checker of OpenMetrics text 1.0.0 (the OpenMetrics specification, "Text format"), for the
//! output of `export --format openmetrics` where no OpenMetrics parser is installed (promtool
//! reads only the Prometheus text format 0.0.4). It checks what the format requires of an
//! exposition: `# EOF` as its last line and nowhere else; every family's `# HELP`, `# TYPE`
//! and `# UNIT` once each, before its samples; families not interleaved or repeated; a type of
//! the format's; a unit that ends the family's name; a counter's family named without `_total`
//! and its samples with it; each sample named after its family with a suffix its type allows;
//! label names and escaped values as the grammar says, none twice; numbers; a histogram's
//! buckets with `le` rising, counts not falling, `+Inf` last and equal to `_count`.

use std::collections::{BTreeMap, HashSet};

/// The suffixes a sample of a family of `kind` may add to the family's name.
fn suffixes(kind: &str) -> &'static [&'static str] {
    match kind {
        "counter" => &["_total", "_created"],
        "gauge" | "unknown" | "stateset" => &[""],
        "info" => &["_info"],
        "histogram" => &["_bucket", "_count", "_sum", "_created"],
        "gaugehistogram" => &["_bucket", "_gcount", "_gsum"],
        "summary" => &["", "_count", "_sum", "_created"],
        _ => &[],
    }
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut b = s.bytes();
    let ok = |c: u8| c.is_ascii_alphabetic() || c == b'_' || (colon && c == b':');
    b.next().is_some_and(ok) && b.all(|c| ok(c) || c.is_ascii_digit())
}

fn number(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        s => s
            .parse::<f64>()
            .ok()
            .filter(|_| {
                let lower = s.to_ascii_lowercase();
                !s.starts_with('+') && !lower.contains("inf") && !lower.contains("nan")
            })
            .ok_or_else(|| format!("not a number: {s:?}")),
    }
}

/// A sample's labels, (name, value) in order.
type Labels = Vec<(String, String)>;

/// A sample line: its name, labels and value.
fn sample(line: &str) -> Result<(String, Labels, f64), String> {
    let end = line
        .find(['{', ' '])
        .ok_or_else(|| format!("no value: {line:?}"))?;
    let name = line[..end].to_string();
    let mut rest = &line[end..];
    let mut labels: Labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        while !rest.starts_with('}') {
            let eq = rest
                .find('=')
                .ok_or_else(|| format!("bad labels: {line:?}"))?;
            let label = &rest[..eq];
            if !is_name(label, false) || label.starts_with("__") {
                return Err(format!("bad label name {label:?}: {line:?}"));
            }
            if labels.iter().any(|(l, _)| l == label) {
                return Err(format!("label {label} twice: {line:?}"));
            }
            rest = rest[eq + 1..]
                .strip_prefix('"')
                .ok_or_else(|| format!("unquoted label value: {line:?}"))?;
            let mut value = String::new();
            let mut chars = rest.char_indices();
            let close = loop {
                match chars.next() {
                    None => return Err(format!("unterminated label value: {line:?}")),
                    Some((i, '"')) => break i,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        _ => return Err(format!("bad escape in a label value: {line:?}")),
                    },
                    Some((_, '\n')) => return Err(format!("raw newline: {line:?}")),
                    Some((_, c)) => value.push(c),
                }
            };
            labels.push((label.to_string(), value));
            rest = &rest[close + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        rest = &rest[1..];
    }
    let mut fields = rest
        .strip_prefix(' ')
        .ok_or_else(|| format!("no space before the value: {line:?}"))?
        .split(' ');
    let value = number(fields.next().unwrap_or_default())?;
    if let Some(ts) = fields.next() {
        number(ts)?;
    }
    if fields.next().is_some() {
        return Err(format!("more than a value and a timestamp: {line:?}"));
    }
    Ok((name, labels, value))
}

/// Checks `text` as an OpenMetrics 1.0.0 exposition; the first violation found.
pub fn check(text: &str) -> Result<(), String> {
    let body = text
        .strip_suffix("# EOF\n")
        .or_else(|| text.strip_suffix("# EOF"))
        .ok_or("the exposition does not end with `# EOF`")?;
    let mut seen: HashSet<String> = HashSet::new();
    // The family being read: name, type, which metadata it had, and whether samples began.
    let mut family: Option<(String, String, HashSet<&str>, bool)> = None;
    // Histogram buckets per (family, labels without le): (le, count); _count likewise.
    let mut buckets: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut counts: BTreeMap<String, f64> = BTreeMap::new();
    for line in body.lines() {
        if line.is_empty() {
            return Err("an empty line".into());
        }
        if let Some(meta) = line.strip_prefix("# ") {
            let mut f = meta.splitn(3, ' ');
            let (word, name, rest) = (f.next().unwrap(), f.next().unwrap_or(""), f.next());
            if !["HELP", "TYPE", "UNIT"].contains(&word) {
                return Err(format!("not a line of the format: {line:?}"));
            }
            if !is_name(name, true) {
                return Err(format!("bad metadata line: {line:?}"));
            }
            let new = family.as_ref().is_none_or(|(n, ..)| n != name);
            if new {
                if !seen.insert(name.to_string()) {
                    return Err(format!("family {name} appears twice"));
                }
                family = Some((name.to_string(), "unknown".into(), HashSet::new(), false));
            }
            let (fname, kind, had, sampled) = family.as_mut().unwrap();
            if *sampled {
                return Err(format!("{word} of {fname} after its samples"));
            }
            if !had.insert(word) {
                return Err(format!("{word} of {fname} twice"));
            }
            let rest = rest.unwrap_or("");
            match word {
                "TYPE" => {
                    if suffixes(rest).is_empty() {
                        return Err(format!("{fname}: no type {rest:?} in the format"));
                    }
                    if rest == "counter" && fname.ends_with("_total") {
                        return Err(format!(
                            "counter family {fname} is named with _total (its samples add it)"
                        ));
                    }
                    *kind = rest.to_string();
                }
                "UNIT" if !rest.is_empty() && !fname.ends_with(&format!("_{rest}")) => {
                    return Err(format!("{fname}: the unit {rest} does not end its name"));
                }
                _ => {}
            }
            continue;
        }
        if line.starts_with('#') {
            return Err(format!("a comment, which the format has not: {line:?}"));
        }
        let (name, labels, value) = sample(line)?;
        let Some((fname, kind, _, sampled)) = family.as_mut() else {
            return Err(format!("a sample before any family: {line:?}"));
        };
        let suffix = name
            .strip_prefix(fname.as_str())
            .filter(|s| suffixes(kind).contains(s))
            .ok_or_else(|| format!("{name} is not a sample of the {kind} {fname}"))?;
        *sampled = true;
        if kind == "counter" && suffix == "_total" && (value.is_nan() || value < 0.0) {
            return Err(format!("a counter below 0 or NaN: {line:?}"));
        }
        if kind == "histogram" {
            let key = format!(
                "{fname}{:?}",
                labels.iter().filter(|(l, _)| l != "le").collect::<Vec<_>>()
            );
            match suffix {
                "_bucket" => {
                    let le = labels
                        .iter()
                        .find(|(l, _)| l == "le")
                        .ok_or_else(|| format!("a bucket without le: {line:?}"))?;
                    buckets
                        .entry(key)
                        .or_default()
                        .push((number(&le.1)?, value));
                }
                "_count" => {
                    counts.insert(key, value);
                }
                _ => {}
            }
        }
    }
    for (key, b) in &buckets {
        for pair in b.windows(2) {
            if !(pair[0].0 < pair[1].0 && pair[0].1 <= pair[1].1) {
                return Err(format!("{key}: buckets not rising: {pair:?}"));
            }
        }
        let last = b.last().unwrap();
        if last.0 != f64::INFINITY {
            return Err(format!("{key}: no +Inf bucket"));
        }
        if counts.get(key).is_some_and(|&c| c != last.1) {
            return Err(format!("{key}: _count is not the +Inf bucket"));
        }
    }
    Ok(())
}
