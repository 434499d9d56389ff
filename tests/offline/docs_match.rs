//! The README and the docs cannot drift from the code (issue 25): its usage block names every
//! subcommand with options each one accepts, its lists of wake methods, loads, export and import
//! formats are the tables' (`WAKE_METHODS`, `GENERATORS`, export `FORMATS`,
//! `SOURCE_FORMATS`), the count of wake methods is the table's length, every page of docs/
//! is linked from it, and its Layout block names every top-level module of src/ and nothing
//! that is not there.

use clap::CommandFactory;
use std::collections::BTreeSet;
use std::path::Path;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The lines of the first fenced block after the heading `heading`.
fn block_after(text: &str, heading: &str) -> Vec<String> {
    let after = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading}"))..];
    let body = &after[after.find("```").unwrap()..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()]
        .lines()
        .map(str::to_string)
        .collect()
}

/// The usage block cut into one entry per `jitterlab <command>` line with its continuation
/// lines.
fn usage_entries(text: &str) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in block_after(text, "## Usage") {
        if let Some(rest) = line.strip_prefix("jitterlab ") {
            let name = rest.split_whitespace().next().unwrap().to_string();
            entries.push((name, rest.to_string()));
        } else if let Some(last) = entries.last_mut() {
            last.1.push(' ');
            last.1.push_str(line.trim());
        }
    }
    entries
}

/// The `--flag`s written in `text` (not `--flag` inside a value such as `'max<200us'`).
fn flags(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    text.match_indices("--")
        .filter(|(at, _)| *at == 0 || matches!(bytes[at - 1], b'[' | b' ' | b'|' | b'('))
        .map(|(at, _)| {
            text[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
        })
        .filter(|f| !f.is_empty())
        .collect()
}

/// The `|`-separated values written after `--option ` in `text`, e.g. `--wake a|b|c`.
fn listed_values(text: &str, option: &str) -> Vec<String> {
    let at = text
        .find(&format!("{option} "))
        .unwrap_or_else(|| panic!("the usage block lists no values of {option}"));
    // A list wrapped over lines ends a line with `|`: the spaces after it continue the list.
    let mut list = String::new();
    for c in text[at + option.len() + 1..].chars() {
        match c {
            ']' => break,
            ' ' if list.ends_with('|') => {}
            ' ' => break,
            c => list.push(c),
        }
    }
    list.split('|').map(str::to_string).collect()
}

#[test]
fn the_usage_block_names_every_subcommand_with_options_it_accepts() {
    let entries = usage_entries(&readme());
    let cli = jitterlab::cli::Cli::command();
    let visible: Vec<&clap::Command> = cli.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    let named: BTreeSet<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    let wanted: BTreeSet<&str> = visible.iter().map(|c| c.get_name()).collect();
    assert_eq!(
        named, wanted,
        "README's usage block against `jitterlab --help`"
    );
    for (name, text) in &entries {
        let command = visible.iter().find(|c| c.get_name() == name).unwrap();
        let accepted: BTreeSet<String> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(str::to_string)
            .collect();
        let unknown: Vec<String> = flags(text).difference(&accepted).cloned().collect();
        assert!(
            unknown.is_empty(),
            "README's usage of `jitterlab {name}` shows options it does not accept: {unknown:?}"
        );
    }
}

#[test]
fn the_usage_lists_are_the_tables() {
    let entries = usage_entries(&readme());
    let of = |name: &str| &entries.iter().find(|(n, _)| n == name).unwrap().1;
    let wake: Vec<&str> = jitterlab::measure::wake::WAKE_METHODS
        .iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(listed_values(of("run"), "--wake"), wake, "--wake in README");
    let exports: Vec<&str> = jitterlab::report::export::FORMATS
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(
        listed_values(of("export"), "--format"),
        exports,
        "export --format in README"
    );
    let imports: Vec<&str> = std::iter::once("auto")
        .chain(
            jitterlab::results::import::SOURCE_FORMATS
                .iter()
                .map(|f| f.name),
        )
        .collect();
    assert_eq!(
        listed_values(of("import"), "--format"),
        imports,
        "import --format in README"
    );
}

#[test]
fn the_introduction_counts_and_lists_what_the_tables_hold() {
    let text = readme();
    let count = jitterlab::measure::wake::WAKE_METHODS.len();
    assert!(
        text.contains(&format!("{count} wake methods")),
        "README should say \"{count} wake methods\""
    );
    let loads: Vec<&str> = jitterlab::load::generators::GENERATORS
        .iter()
        .map(|g| g.name)
        .collect();
    let at = text.find("--load ").expect("README names the loads");
    let written: Vec<&str> = text[at + "--load ".len()..]
        .split(':')
        .next()
        .unwrap()
        .split('|')
        .collect();
    assert_eq!(written, loads, "the --load list in README's introduction");
}

#[test]
fn every_doc_page_is_linked_and_every_layout_entry_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = readme();
    for page in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = page.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            assert!(
                text.contains(&format!("(docs/{name})")),
                "README links no docs/{name}"
            );
        }
    }
    let layout = block_after(&text, "## Layout");
    let entries: BTreeSet<String> = layout
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("src/") || w.starts_with("tests/"))
        .map(str::to_string)
        .collect();
    for entry in &entries {
        assert!(
            root.join(entry).exists(),
            "README's Layout names {entry}, which is not there"
        );
    }
    for module in std::fs::read_dir(root.join("src")).unwrap() {
        let name = module.unwrap().file_name().into_string().unwrap();
        let shown = if name.ends_with(".rs") {
            format!("src/{name}")
        } else {
            format!("src/{name}/")
        };
        assert!(
            entries.contains(&shown) || name == "lib.rs",
            "README's Layout does not show {shown}"
        );
    }
}

/// The hostile re-run's L3-e: README's `export ... --format columns` example followed a run
/// without `--samples` and ended exit 2. In its Examples block, an export of a format that
/// writes samples (`BudgetUse::Refused("samples")`: csv, columns) follows a `run` with
/// `--samples`, the run it exports.
#[test]
fn the_readme_exports_samples_only_of_a_run_that_kept_them() {
    use jitterlab::report::export::{BudgetUse, FORMATS};
    let block = block_after(&readme(), "documents every option. Examples:");
    let mut last_run: Option<&str> = None;
    let mut exports = 0;
    for line in &block {
        let command = line.split('#').next().unwrap();
        if command.starts_with("jitterlab run ") {
            last_run = Some(command);
        }
        if !command.starts_with("jitterlab export ") {
            continue;
        }
        let format = command
            .split_whitespace()
            .skip_while(|w| *w != "--format")
            .nth(1)
            .unwrap_or_else(|| panic!("{line}: no --format"));
        let row = FORMATS
            .iter()
            .find(|f| f.name == format)
            .unwrap_or_else(|| panic!("{line}: no format {format}"));
        exports += 1;
        if row.budget == BudgetUse::Refused("samples") {
            assert!(
                last_run.is_some_and(|r| r.contains(" --samples")),
                "{line}: exports samples, but the run before it ({last_run:?}) kept none"
            );
        }
        assert!(
            !command.contains(" > "),
            "{line}: a shell redirection makes an empty file when the export fails; use -o"
        );
    }
    assert!(exports > 0, "README's examples export nothing");
}

/// The hostile re-run's L3-a: an `exec:` program can stop jitterlab for good (`kill -STOP
/// $PPID`), which jitterlab cannot refuse. The actions' section says so, how to resume the
/// run, and how to run a hook that cannot touch it (as another user; checked by hand: its
/// kill is refused, the run completes).
#[test]
fn the_actions_docs_say_what_a_program_can_do_to_jitterlab() {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/user-guide.md"))
            .unwrap();
    let at = guide
        .find("### Actions on a spike and at the end")
        .expect("the actions' section");
    let section = &guide[at..];
    let section = &section[..section[4..].find("\n## ").map_or(section.len(), |e| e + 4)];
    for said in [
        "**What a program can do to jitterlab.**",
        "exec:sh -c 'kill -STOP $PPID'",
        "`kill -CONT <jitterlab's pid>`",
        "exec:setpriv --reuid=65534 --regid=65534 --clear-groups PROGRAM",
    ] {
        assert!(
            section.contains(said),
            "the actions' section lacks {said:?}"
        );
    }
}
