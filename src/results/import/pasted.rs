//! What people paste around a tool's output, taken off before any format reads it: the
//! terminal's escape sequences (cyclictest without `-q` moves the cursor up with `ESC [ n A`
//! before every status update, and a redirected file keeps those bytes), carriage returns
//! (CRLF files, and `\r` status updates), trailing blanks. Shell prompts, `running cmd:` lines
//! before the output and comments after it are each format's to skip, since only the format
//! knows where its output begins and ends.
//!
//! A note someone typed after a summary line (`... Max:     10   # after tuning`) is taken off
//! by [`without_comment`], which the text formats call on their data lines: in the outputs
//! read here a `#` after a line's data is never a value, except cyclictest's own overflow
//! tail `# 00290 others`, which is kept.
//!
//! Elisions are refused: a file where someone replaced part of the output with `...` or a
//! "More histogram entries" note has lost samples, and importing it would print wrong counts
//! as facts.

/// The text with escape sequences and carriage returns removed, lines trimmed at the end; an
/// error when a line shows that part of the output was left out.
pub fn clean(text: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\r' => {
                // CRLF is one line break; a lone CR (a status line overwritten in place) too.
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            _ => out.push(c),
        }
    }
    let mut cleaned = String::with_capacity(out.len());
    // A YAML document (stress-ng -Y) ends with a line of `...`: its end marker, not an elision.
    let yaml = out.lines().map(str::trim).find(|l| !l.is_empty()) == Some("---");
    for (n, line) in out.lines().enumerate() {
        let line = line.trim_end();
        if let Some(what) = elision(line).filter(|_| !(yaml && line.trim() == "...")) {
            return Err(format!(
                "line {} ('{}') shows that {what}: the numbers would not add up; import the complete output as the tool wrote it",
                n + 1,
                line.trim()
            ));
        }
        cleaned.push_str(line);
        cleaned.push('\n');
    }
    Ok(cleaned)
}

/// The line without a comment typed after its data: from the first `#` that follows a blank
/// and some data, to the end. What cannot be a comment stays: a `#` that starts the line (the
/// rt-tests summary lines `# Max Latencies: ...` and rtla's header are written so), and
/// cyclictest's `# NNNNN others` at the end of a `# Thread k:` line (the overflows beyond the
/// listed cycle numbers). Trailing blanks before the comment go with it.
pub(crate) fn without_comment(line: &str) -> &str {
    let body_from = line.len() - line.trim_start().len();
    // The line's own leading '#' is its label, not a comment.
    let mut search_from = body_from + usize::from(line[body_from..].starts_with('#'));
    while let Some(at) = line[search_from..].find('#').map(|i| i + search_from) {
        let blank_before = line[..at].ends_with(char::is_whitespace);
        let data_before = !line[body_from..at]
            .trim()
            .trim_start_matches('#')
            .trim()
            .is_empty();
        if blank_before && data_before && !is_others_tail(&line[at..]) {
            return line[..at].trim_end();
        }
        search_from = at + 1;
    }
    line
}

/// cyclictest's `# 00290 others` (rt-tests: the overflows whose cycle numbers were not
/// listed), possibly followed by a comment of its own.
fn is_others_tail(tail: &str) -> bool {
    let mut words = tail[1..].split_whitespace();
    matches!(
        (words.next(), words.next()),
        (Some(n), Some("others")) if n.bytes().all(|b| b.is_ascii_digit())
    )
}

/// Skips one escape sequence after its ESC: CSI (`[` parameters, intermediates, one final
/// byte), OSC (`]` text up to BEL or the string terminator `ESC \`: a terminal title), or a
/// single character for the two-byte forms.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    chars.next_if_eq(&'\\');
                    break;
                }
            }
        }
        _ => {}
    }
}

/// What a line of an elided paste says was left out, or None for an ordinary line.
fn elision(line: &str) -> Option<&'static str> {
    let t = line.trim();
    let lower = t.to_ascii_lowercase();
    let dots = !t.is_empty()
        && t.trim_matches(|c| c == '[' || c == ']' || c == '(' || c == ')')
            .chars()
            .all(|c| c == '.' || c == '\u{2026}')
        && (t.contains("...") || t.contains('\u{2026}'));
    if dots || lower == "<snip>" || lower == "[snip]" {
        Some("part of the output was cut out")
    } else if lower.contains("more histogram entries") {
        Some("histogram rows were left out")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_codes_and_carriage_returns_go() {
        let text = "T: 0 ( 12) P:95\r\n\u{1b}[2A\u{1b}[0KT: 0 ( 12) P:96   \r\n# Histogram\rrow";
        assert_eq!(
            clean(text).unwrap(),
            "T: 0 ( 12) P:95\nT: 0 ( 12) P:96\n# Histogram\nrow\n"
        );
        // A title (OSC) ends at BEL or at ESC \; a lone BEL is not part of any sequence.
        let titled = "a\u{1b}]0;title\u{7}b\u{1b}]2;t\u{1b}\\c\u{7}d";
        assert_eq!(clean(titled).unwrap(), "abc\u{7}d\n");
    }

    #[test]
    fn comments_after_the_data_go_and_data_stays() {
        for (line, kept) in [
            (
                "T: 0 ( 1234) P:99 I:1000 C: 1000 Min: 1 Act: 2 Avg: 3 Max: 10   # after tuning",
                "T: 0 ( 1234) P:99 I:1000 C: 1000 Min: 1 Act: 2 Avg: 3 Max: 10",
            ),
            (
                "# Max Latencies: 00280 00421 # isolcpus=1",
                "# Max Latencies: 00280 00421",
            ),
            ("000012 000345\t000310  #peak", "000012 000345\t000310"),
            (
                "     Maximum:\t 4050 (us) # irq storm",
                "     Maximum:\t 4050 (us)",
            ),
            (
                "count:      1000       1000 #x",
                "count:      1000       1000",
            ),
            // cyclictest's overflow tail is data; a comment after it is not.
            (
                "# Thread 0: 00013 00039 # 00290 others",
                "# Thread 0: 00013 00039 # 00290 others",
            ),
            (
                "# Thread 0: 00013 # 00290 others   # second run",
                "# Thread 0: 00013 # 00290 others",
            ),
            // A line's own leading '#', a '#' without data before it, or glued to a word.
            ("# Histogram", "# Histogram"),
            ("# RTLA timerlat histogram", "# RTLA timerlat histogram"),
            ("  # just a note", "  # just a note"),
            (
                "root@board:~# cyclictest -h400",
                "root@board:~# cyclictest -h400",
            ),
            ("", ""),
        ] {
            assert_eq!(without_comment(line), kept, "{line:?}");
        }
    }

    #[test]
    fn elisions_are_refused_with_the_line() {
        for (text, needle) in [
            (
                "000001 5\n...\n# Total: 5",
                "line 2 ('...') shows that part of the output was cut out",
            ),
            ("000001 5\n   [\u{2026}]\n", "line 2 ('[\u{2026}]')"),
            ("000001 5\n<snip>\n", "cut out"),
            (
                "# More histogram entries ...\n",
                "histogram rows were left out",
            ),
        ] {
            let e = clean(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        // Nor is the end marker of a YAML document.
        assert!(clean("---\nmetrics:\n...\n").is_ok());
        assert!(clean("metrics:\n...\n").is_err());
        // Dots inside a line are not an elision.
        assert!(clean("Pre-heat for 1 seconds...\n").is_ok());
    }
}
