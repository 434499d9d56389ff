//! The help and the docs of `export --format` and `import --format` come from the tables
//! (`report::export::FORMATS`, `results::import::SOURCE_FORMATS`): `--help` lists every row
//! with its help text, and the docs name every row. A format added to a table without its
//! help or its docs fails here, naming it (issue 41: `import --help` named 4 of 13 formats,
//! and `cli` repeated the export table by hand, without `counters`).

use crate::common::jitterlab;
use jitterlab::report::export::FORMATS;
use jitterlab::results::import::SOURCE_FORMATS;

/// `text` with every run of whitespace made one space: clap wraps long help lines.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn help(command: &str) -> String {
    let out = jitterlab(&[command, "--help"]);
    assert!(out.status.success(), "{command} --help failed");
    flat(&String::from_utf8(out.stdout).unwrap())
}

fn doc(name: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

#[test]
fn export_help_lists_every_format_with_its_help() {
    let text = help("export");
    for f in FORMATS {
        assert!(
            !f.help.trim().is_empty(),
            "export format {} has no help",
            f.name
        );
        let line = flat(&format!("{}: {}", f.name, f.help));
        assert!(
            text.contains(&line),
            "export --help does not list `{line}`:\n{text}"
        );
    }
}

#[test]
fn import_help_lists_every_format_with_its_help() {
    let text = help("import");
    for f in SOURCE_FORMATS {
        let line = flat(&format!("{}: {}", f.name, f.help));
        assert!(
            text.contains(&line),
            "import --help does not list `{line}`:\n{text}"
        );
    }
}

/// The user guide's synopsis of `export` is the table's names in its order, and each format is
/// described (named in backticks or bold) in the guide; docs/import.md names every importer.
#[test]
fn the_docs_name_every_format_of_the_tables() {
    let guide = doc("docs/user-guide.md");
    let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
    let synopsis = format!("jitterlab export RUN_DIR --format {}", names.join("|"));
    assert!(
        guide.contains(&synopsis),
        "docs/user-guide.md's export synopsis is not `{synopsis}`"
    );
    let export = &guide[guide.find("## `jitterlab export`").unwrap()..];
    for name in &names {
        assert!(
            export.contains(&format!("`{name}`")) || export.contains(&format!("**{name}**")),
            "docs/user-guide.md's export section does not describe `{name}`"
        );
    }
    let import = doc("docs/import.md");
    for f in SOURCE_FORMATS {
        assert!(
            import.contains(&format!("`{}`", f.name)),
            "docs/import.md does not name the import format `{}`",
            f.name
        );
    }
}
