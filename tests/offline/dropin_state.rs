//! A measuring test never lets a drop-in write into the user's state directory: `cyclictest`,
//! `oslat` and `timerlat` without `--jitterlab-out` keep their result directory in
//! `$XDG_STATE_HOME/jitterlab/results` (or `~/.local/state/...`, docs/cyclictest.md "Result
//! directory"), so a test that runs one without `--jitterlab-out` and without
//! `XDG_STATE_HOME` set would fill the tester's (session 54's rule: tests never write into the
//! user's directories). This test reads tests/measuring's sources and fails, naming file and
//! line, on an argument list that starts with a drop-in's name and has neither: in the list
//! itself, in the statement that runs it (`.arg(...)` after `.args([...])`), in its function
//! (an `XDG_STATE_HOME` set, or a `--jitterlab-out` added by `extend`), or in a helper of the
//! same file the function calls (one that sets `XDG_STATE_HOME`).

use std::path::Path;

const DROP_INS: &[&str] = &["cyclictest", "oslat", "timerlat"];

/// The lines (1-based) of `source` where a drop-in runs with neither guard.
fn unguarded(source: &str) -> Vec<usize> {
    let helpers = helpers_setting_state(source);
    let mut found = Vec::new();
    for tool in DROP_INS {
        let literal = format!("\"{tool}\"");
        for (at, _) in source.match_indices(&literal) {
            // The first element of a list: `[` (of `[`, `vec![`, `&[`, `.args([`) before it.
            let before = source[..at].trim_end();
            if !before.ends_with('[') {
                continue;
            }
            let open = before.len() - 1;
            let Some(close) = matching_bracket(source, open) else {
                continue;
            };
            let list = &source[open..=close];
            let statement_start = source[..open].rfind([';', '{', '}']).map_or(0, |i| i + 1);
            let statement_end = source[close..]
                .find(';')
                .map_or(source.len(), |e| close + e);
            let statement = &source[statement_start..statement_end];
            let function = enclosing_function(source, at);
            let guarded = list.contains("--jitterlab-out")
                || statement.contains("--jitterlab-out")
                || function.contains("XDG_STATE_HOME")
                || function
                    .lines()
                    .any(|l| l.contains("extend") && l.contains("--jitterlab-out"))
                || helpers.iter().any(|h| function.contains(&format!("{h}(")));
            if !guarded {
                found.push(source[..at].lines().count());
            }
        }
    }
    found.sort_unstable();
    found
}

/// The index of the `]` that closes the `[` at `open`.
fn matching_bracket(source: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, c) in source[open..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The text of the function around `at`: from its `fn ` line to the next function's.
fn enclosing_function(source: &str, at: usize) -> &str {
    let start = source[..at].rfind("fn ").unwrap_or(0);
    let end = source[at..]
        .find("\nfn ")
        .or_else(|| source[at..].find("\n#[test]"))
        .map_or(source.len(), |e| at + e);
    &source[start..end]
}

/// The names of the file's functions that set `XDG_STATE_HOME` for what they run.
fn helpers_setting_state(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in source.match_indices("fn ") {
        let rest = &source[at + 3..];
        let Some(name_end) = rest.find(['(', '<']) else {
            continue;
        };
        let name = rest[..name_end].trim();
        let body_end = rest.find("\n}").unwrap_or(rest.len());
        if !name.is_empty() && rest[..body_end].contains("XDG_STATE_HOME") {
            names.push(name.to_string());
        }
    }
    names
}

#[test]
fn no_measuring_test_runs_a_drop_in_into_the_users_state_directory() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/measuring");
    let mut bad = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for line in unguarded(&source) {
            bad.push(format!(
                "tests/measuring/{}:{line}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "a drop-in run without --jitterlab-out and without XDG_STATE_HOME set writes its result directory into the tester's state directory: pass --jitterlab-out DIR (a temp dir) or set XDG_STATE_HOME: {}",
        bad.join(", ")
    );
}

/// The scan finds what it is for, and passes each way of guarding.
#[test]
fn the_scan_tells_a_guarded_drop_in_from_an_unguarded_one() {
    let bad = "#[test]\nfn t() {\n    let o = jitterlab(&[\n        \"cyclictest\",\n        \"-D\",\n        \"1\",\n    ]);\n}\n";
    assert_eq!(unguarded(bad), vec![4]);
    let listed = bad.replace(
        "\"1\",\n",
        "\"1\",\n        \"--jitterlab-out\",\n        d,\n",
    );
    assert_eq!(unguarded(&listed), Vec::<usize>::new());
    let chained = "fn t() {\n    Command::new(b).args([\"oslat\", \"-D\", \"1\"]).arg(format!(\"--jitterlab-out={}\", d)).output();\n}\n";
    assert_eq!(unguarded(chained), Vec::<usize>::new());
    let env = "fn t() {\n    Command::new(b).args([\"timerlat\", \"hist\"]).env(\"XDG_STATE_HOME\", s).output();\n}\n";
    assert_eq!(unguarded(env), Vec::<usize>::new());
    let helper = "fn as_me(a: &[&str]) -> O {\n    c.args(a).env(\"XDG_STATE_HOME\", s).output()\n}\n\nfn t() {\n    let o = as_me(&[\"oslat\", \"-D\", \"1\"]);\n}\n";
    assert_eq!(unguarded(helper), Vec::<usize>::new());
    // Not a drop-in run: the name as another function's argument.
    assert_eq!(
        unguarded("fn t() { lava_cases(\"cyclictest\", &json); }\n"),
        Vec::<usize>::new()
    );
}
