//! Recognising a source format from a file's content: each row of [`SOURCE_FORMATS`] says how
//! it is recognised (its `recognise`); the first row that says yes, in the table's order, is
//! the format, and one that refuses ends the search with its reason.

use super::SOURCE_FORMATS;
use super::imported::*;

/// Recognises a binary file (one with NUL bytes, `super::is_binary`) from its content.
pub(crate) fn detect_binary(bytes: &[u8]) -> std::result::Result<&'static SourceFormat, String> {
    let mut not = Vec::new();
    for &format in SOURCE_FORMATS {
        if let Recognise::Binary(recognise) = format.recognise {
            match recognise(bytes) {
                Ok(()) => return Ok(format),
                Err(why) => not.push(format!("not {}: {why}", format.name)),
            }
        }
    }
    Err(format!(
        "as a binary file (it has NUL bytes) it is none of the binary formats read ({})",
        not.join("; ")
    ))
}

/// Recognises a file's format from its content; the error says what was recognised.
pub(crate) fn detect(text: &str) -> std::result::Result<&'static SourceFormat, String> {
    if text.lines().any(|l| l.trim_start().starts_with('{')) {
        let doc = super::parse_json(text).map_err(|e| format!("it starts like JSON but {e}"))?;
        let tool = doc
            .get("cmdline:")
            .or_else(|| doc.get("cmdline"))
            .and_then(|c| c.as_str())
            .and_then(|c| c.split_whitespace().next())
            .map(|t| t.rsplit('/').next().unwrap_or(t).to_string());
        let json_formats = || {
            SOURCE_FORMATS.iter().filter_map(|f| match f.recognise {
                Recognise::Json(recognise, mark) => Some((*f, recognise, mark)),
                _ => None,
            })
        };
        return json_formats()
            .find(|(_, recognise, _)| recognise(tool.as_deref(), &doc))
            .map(|(f, _, _)| f)
            .ok_or_else(|| {
                format!(
                    "it is JSON{} but none of the JSON formats read ({})",
                    tool.map_or(String::new(), |t| format!(" written by '{t}'")),
                    json_formats()
                        .map(|(f, _, mark)| format!("{} ({mark})", f.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for &format in SOURCE_FORMATS {
        if let Recognise::Text(recognise) = format.recognise {
            match recognise(&lines) {
                Recognised::Yes => return Ok(format),
                Recognised::Refused(why) => return Err(why.into()),
                Recognised::No => {}
            }
        }
    }
    Err("it is neither JSON nor a histogram text jitterlab knows".into())
}

/// The first entry of a JSON document's `thread` object (cyclictest's and oslat's layout).
pub(crate) fn first_thread(doc: &serde_json::Value) -> Option<&serde_json::Value> {
    doc.get("thread")
        .and_then(|t| t.as_object())
        .and_then(|t| t.values().next())
}

impl From<bool> for Recognised {
    fn from(yes: bool) -> Self {
        if yes { Recognised::Yes } else { Recognised::No }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Each captured output, and a minimal text of each format that has no capture here, is
    /// recognised as its own format; every text row of the table is among them; refusals and
    /// the unrecognised say why.
    #[test]
    fn every_row_recognises_its_own_output() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import");
        let file = |n: &str| std::fs::read_to_string(data.join(n)).unwrap();
        let cases: Vec<(String, &str)> = vec![
            (file("cyclictest.json"), "cyclictest-json"),
            (file("cyclictest-status.json"), "cyclictest-json"),
            (file("oslat.json"), "oslat-json"),
            (file("oslat-2cpu.json"), "oslat-json"),
            (file("jitterdebugger-results.json"), "jitterdebugger"),
            (file("rteval-summary.xml"), "rteval"),
            (
                "# RTLA osnoise histogram\nIndex   CPU-000\n".into(),
                "rtla-osnoise-hist",
            ),
            (file("rtla-timerlat-hist.txt"), "rtla-timerlat-hist"),
            (file("rtla-timerlat-hist-user.txt"), "rtla-timerlat-hist"),
            (file("cyclictest-hist.txt"), "cyclictest-hist"),
            (file("cyclictest-hist-overflow.txt"), "cyclictest-hist"),
            (file("oslat.txt"), "oslat-text"),
            (file("oslat-2cpu.txt"), "oslat-text"),
            (file("stress-ng-cyclic.txt"), "stress-ng-cyclic"),
            (
                "CPU Period       Runtime        Noise\n".into(),
                "rtla-osnoise-top",
            ),
            (
                "CPU COUNT      |   cur   min   avg   max\n".into(),
                "rtla-timerlat-top",
            ),
            (file("cyclictest-status.txt"), "cyclictest-status"),
        ];
        for (text, name) in &cases {
            assert_eq!(detect(text).map(|f| f.name), Ok(*name), "{name}");
        }
        for format in SOURCE_FORMATS {
            let binary = matches!(format.recognise, Recognise::Binary(_));
            assert!(
                binary || cases.iter().any(|(_, n)| *n == format.name),
                "{} has no case here",
                format.name
            );
        }
        assert_eq!(
            detect("over: 0\ncount: 10\nmin: 1\nmax: 3\n"),
            Err(crate::results::import::rtla_timerlat::NO_HEADER.to_string())
        );
        assert_eq!(
            detect(&file("stress-ng-cyclic.yaml")),
            Err(crate::results::import::stress_ng_cyclic::YAML_REFUSED.to_string())
        );
        let unknown = detect("{\"cmdline\": \"/usr/bin/foo -x\"}").unwrap_err();
        assert!(
            unknown.contains("written by 'foo'") && unknown.contains("oslat-json (thread.N.freq)"),
            "{unknown}"
        );
        assert!(detect("hello\n").unwrap_err().contains("neither JSON nor"));
    }
}
