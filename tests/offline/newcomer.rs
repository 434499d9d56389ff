//! A newcomer's first hour (issue 42): the README's sample output is what jitterlab prints of
//! the very run it shows (kept in tests/data/readme-run), the next step after its first command
//! works as written, and every relative link and #anchor of README.md and docs/*.md resolves.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of the section that starts at the heading line `heading`, up to the next heading
/// of the same or a higher level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let at = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no heading {heading:?}"))
        + 1;
    let level = heading.split(' ').next().unwrap();
    let rest = &text[at + heading.len()..];
    let end = rest
        .match_indices("\n#")
        .find(|(i, _)| {
            let line = rest[i + 1..].lines().next().unwrap_or("");
            let hashes = line.split(' ').next().unwrap_or("");
            hashes.chars().all(|c| c == '#') && hashes.len() <= level.len()
        })
        .map_or(rest.len(), |(i, _)| i);
    &text[at..at + heading.len() + end]
}

/// The fenced blocks of `text`: (info string, lines).
fn fenced(text: &str) -> Vec<(String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), Vec::new())),
            (Some(_), Some(_)) => blocks.push(open.take().unwrap()),
            (Some((_, lines)), None) => lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    blocks
}

/// Item 1: the README's sample summary is, line for line, what `run` prints of the run it
/// shows: that run's result directory is tests/data/readme-run (made by the README's first
/// command on the development VM), and its summary is rendered here with the code `run` uses.
/// Only the warnings, printed above the table, are left out of the README (it says so).
#[test]
fn the_readme_sample_is_what_run_prints_of_that_run() {
    let readme = read("README.md");
    let try_it = section(&readme, "## Try it");
    let blocks = fenced(try_it);
    let first = &blocks
        .iter()
        .find(|(info, _)| info == "sh")
        .expect("Try it has a command")
        .1;
    let sample = &blocks
        .iter()
        .find(|(info, _)| info == "text")
        .expect("Try it shows the output")
        .1;
    let fixture = root().join("tests/data/readme-run");
    let run = jitterlab::results::loaded::open(&fixture).unwrap();
    // The fixture is the run of the README's command, as its run.json records.
    let recorded = run.record.command_line[1..].join(" ");
    assert!(
        first[0].ends_with(&format!("-- {recorded}")),
        "README's first command {:?} is not the fixture's {recorded:?}",
        first[0]
    );
    let results = sample
        .last()
        .and_then(|l| l.strip_prefix("Results: "))
        .expect("the sample ends with the Results line");
    assert!(results.starts_with("jitterlab-results/"), "{results}");
    let printed = jitterlab::report::terminal::summary(&run.record, Path::new(results), false);
    let printed: Vec<&str> = printed
        .lines()
        .skip_while(|l| !l.starts_with("jitterlab run:"))
        .collect();
    assert!(!run.record.warnings.is_empty(), "the fixture has warnings");
    assert_eq!(
        sample.iter().map(String::as_str).collect::<Vec<_>>(),
        printed,
        "README's sample against the summary of tests/data/readme-run"
    );
    assert!(
        try_it.contains("after the warnings"),
        "README says that the warnings are left out"
    );
}

/// Item 2: the README has exactly two commands to type, one that measures and shows a result
/// (Try it) and one that tests (Test); right after the first it says how to run the binary it
/// built (`cargo install --path .`), and every later example runs `jitterlab` as installed,
/// none `cargo run`. The user guide's quick start does the same.
#[test]
fn after_the_first_command_the_next_step_works() {
    let readme = read("README.md");
    let try_it = section(&readme, "## Try it");
    let commands = |text: &str| -> Vec<String> {
        fenced(text)
            .into_iter()
            .filter(|(info, _)| info == "sh")
            .flat_map(|(_, lines)| lines)
            // Comments dropped.
            .map(|l| l.split(" #").next().unwrap().trim_end().to_string())
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .collect()
    };
    assert_eq!(
        commands(try_it),
        ["cargo run --release -- run --duration 30s --load spike:cpu=0,every=1s,len=2ms"],
        "Try it: one command"
    );
    assert_eq!(
        commands(section(&readme, "## Test")),
        ["cargo test"],
        "Test: one command"
    );
    let install = "cargo install --path .";
    let said = try_it
        .find(install)
        .expect("Try it says how to put jitterlab on the PATH");
    assert!(
        try_it.find("```text").unwrap() < said,
        "the install step follows the first run"
    );
    assert!(
        try_it.contains("target/release/jitterlab"),
        "Try it names the binary the first command built"
    );
    let later = &readme[readme.find("## Try it").unwrap() + try_it.len()..];
    for line in commands(later) {
        assert!(
            !line.contains("cargo run"),
            "a later example runs the build again: {line}"
        );
    }
    let guide = read("docs/user-guide.md");
    let quick = section(&guide, "## Quick start");
    let quick_commands = commands(quick);
    assert_eq!(
        quick_commands.first().map(String::as_str),
        Some(install),
        "the quick start installs first"
    );
    for line in &quick_commands[1..] {
        let program = line.split_whitespace().next().unwrap();
        assert_eq!(
            program, "jitterlab",
            "the quick start runs jitterlab as installed: {line}"
        );
    }
    // Its sample is the README's, of the same command.
    let sample = |text: &str| {
        fenced(text).into_iter().find(|(info, lines)| {
            (info.is_empty() || info == "text")
                && lines
                    .first()
                    .is_some_and(|l| l.starts_with("jitterlab run:"))
        })
    };
    assert_eq!(
        sample(quick).map(|b| b.1),
        sample(try_it).map(|b| b.1),
        "the quick start's sample"
    );
    let readme_run = commands(try_it)[0].replace("cargo run --release -- ", "jitterlab ");
    assert!(
        quick_commands.contains(&readme_run),
        "the quick start runs the README's command {readme_run:?}"
    );
}

/// A Markdown page's anchors: GitHub's slugs of its headings (lower case, spaces to `-`,
/// punctuation other than `-` and `_` dropped, repeats numbered `-1`, `-2`...) and explicit
/// `<a id>`/`<a name>` anchors.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        for key in ["<a id=\"", "<a name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(key) {
                rest = &rest[at + key.len()..];
                if let Some(end) = rest.find('"') {
                    seen.insert(rest[..end].to_string());
                }
            }
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut name = slug.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{slug}-{n}");
        }
        seen.insert(name);
    }
    seen
}

/// The relative link targets of a Markdown page outside code: `](target)`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Inline code spans hold no links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_string());
            }
            rest = &rest[end..];
        }
    }
    out
}

/// Item 6: every relative link and #anchor of README.md and docs/*.md resolves: the file
/// exists (in the repository, not only on this machine: no `..` out of it) and, for a
/// Markdown target, the anchor is one of its headings'.
#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut pages: Vec<PathBuf> = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in links(&text) {
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let name = page.strip_prefix(root()).unwrap().display().to_string();
            let inside = path
                .canonicalize()
                .is_ok_and(|p| p.starts_with(root().canonicalize().unwrap()));
            if !inside {
                broken.push(format!("{name}: {target}: no such file in the repository"));
                continue;
            }
            if let Some(anchor) = anchor
                && path.extension().is_some_and(|e| e == "md")
                && !anchors(&std::fs::read_to_string(&path).unwrap()).contains(anchor)
            {
                broken.push(format!("{name}: {target}: no such anchor"));
            }
        }
    }
    assert!(checked > 100, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_anchor_slugs_are_githubs() {
    let a = anchors("# A b\n## What survives a kill\n## A b\n### `--wake pi-mutex`: inversion\n");
    for slug in [
        "a-b",
        "what-survives-a-kill",
        "a-b-1",
        "--wake-pi-mutex-inversion",
    ] {
        assert!(a.contains(slug), "{slug} in {a:?}");
    }
}

/// Item 6: docs/reproducing.md named its sources by a folder that is not in the repository
/// (`shared/seeds/`); it names each study by title, author and year.
#[test]
fn reproducing_names_the_studies() {
    let text = read("docs/reproducing.md");
    assert!(
        !text.contains("shared/"),
        "names a folder outside the repository"
    );
    for said in [
        "\"Linux® as a Real-Time Operating System\"",
        "David Beal, Freescale Semiconductor",
        "\"Embedded Linux is Ready for Real-Time\"",
        "MontaVista Software",
        "\"Latency on preemptible Real-Time Linux on DCP-SH7780\"",
        "\"Real-Time Embedded Linux Study on ARM Cortex-A8\"",
        "Hedera Innovations Ltd",
        "\"WP1-RTOS State of the Art Analysis\"",
    ] {
        assert!(text.contains(said), "docs/reproducing.md lacks {said}");
    }
}

/// Item 5: `--budget 'max>1ms'` reads as "fail over 1 ms" to a newcomer, and means the
/// opposite (a lower bound, which the grammar keeps for checking that a spike showed). The
/// budget's page explains it where the grammar is, with the clause to write instead.
#[test]
fn the_budget_page_explains_an_inverted_clause() {
    let text = read("docs/budget.md");
    let grammar = text.find("op       :=").expect("the grammar");
    let said = text
        .find("`max>1ms` is accepted, and passes only when some wakeup")
        .expect("budget.md explains max>1ms");
    assert!(grammar < said, "right after the grammar");
    assert!(
        text[said..].contains("write\n`max<1ms`"),
        "and says what to write"
    );
}
