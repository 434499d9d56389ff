//! The sys boundary: `src/sys/` is the one place that talks to libc (issue 18), so that the
//! differences between glibc and musl and between 32- and 64-bit targets are handled there and
//! nowhere else. This test fails when a `libc` path appears anywhere else under `src/`.
//!
//! Nothing is allowed outside `src/sys/`: the allow-list below is empty on purpose. Add a file
//! to it only with a comment saying why its libc use cannot live in `src/sys/`.

use crate::scan::sources;
use std::path::Path;

/// Files outside `src/sys/` allowed to name libc, each with the reason. Empty: none needs to.
const ALLOWED: &[&str] = &[];

/// Every `file:line: text` under `root` (a `src/` tree) outside `root/sys/` that uses the
/// libc crate: a path `libc::...` (code, comments and strings alike: a mention in a comment is
/// a use waiting to happen), `use libc` or `extern crate libc`.
fn libc_uses_outside_sys(root: &Path) -> Vec<String> {
    let mut uses = Vec::new();
    for source in sources(root) {
        let rel = source.rel.as_str();
        if rel.starts_with("sys/") || ALLOWED.contains(&rel) {
            continue;
        }
        // Every line as written, comments and tests included.
        for line in &source.lines {
            if names_libc(&line.text) {
                uses.push(format!("src/{rel}:{}: {}", line.n, line.text.trim()));
            }
        }
    }
    uses
}

/// Whether `line` names the libc crate: `libc` as a whole identifier followed by `::`, or
/// imported whole.
fn names_libc(line: &str) -> bool {
    let bytes = line.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    line.match_indices("libc").any(|(at, _)| {
        let before_ok = at == 0 || !ident(bytes[at - 1]);
        let rest = line[at + 4..].trim_start();
        let path = rest.starts_with("::");
        let whole = rest.is_empty() || rest.starts_with(';') || rest.starts_with("as ");
        let imported = line.trim_start().starts_with("use ")
            || line.trim_start().starts_with("pub use ")
            || line.contains("extern crate");
        before_ok && (path || (imported && whole))
    })
}

#[test]
fn libc_is_named_only_in_src_sys() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let uses = libc_uses_outside_sys(&src);
    assert!(
        uses.is_empty(),
        "libc is used outside src/sys/ ({} lines); wrap the call in a src/sys/ module and use that:\n{}",
        uses.len(),
        uses.join("\n")
    );
}

#[test]
fn the_scan_finds_a_planted_use_and_passes_sys_and_lookalikes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("sys")).unwrap();
    std::fs::create_dir_all(root.join("load/deep")).unwrap();
    std::fs::write(root.join("sys/ok.rs"), "unsafe { libc::getpid() };\n").unwrap();
    std::fs::write(
        root.join("load/fine.rs"),
        "// glibc and musl differ; mylibc::x is another crate\nlet libc_like = 1;\n",
    )
    .unwrap();
    std::fs::write(
        root.join("load/deep/bad.rs"),
        "fn f() {}\n    unsafe { libc :: kill(0, 9) };\nuse libc;\nextern crate libc as c;\n",
    )
    .unwrap();
    std::fs::write(root.join("load/deep/notes.txt"), "libc::kill\n").unwrap();
    let uses = libc_uses_outside_sys(root);
    assert_eq!(
        uses,
        [
            "src/load/deep/bad.rs:2: unsafe { libc :: kill(0, 9) };",
            "src/load/deep/bad.rs:3: use libc;",
            "src/load/deep/bad.rs:4: extern crate libc as c;",
        ]
    );
}
