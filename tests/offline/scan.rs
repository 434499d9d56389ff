//! The one reader of the source tree for the guard tests (layers, readers, writers, kernel
//! state, the libc boundary, stdout, spawners, signals, exit codes): every `.rs` file under
//! `src/`, each line with what of it is code and whether it is test code, decided once here so
//! that no guard reads the tree its own way (one stopped at a file's first `#[cfg(test)]` and
//! left 1,690 production lines unread).
//!
//! - **Code** is a line with its comments taken out (`//` to the end of the line, `/* */`,
//!   doc comments), by a lexer that knows string, raw string and character literals: a `//`
//!   inside `"http://..."` is not a comment, a `"` inside `'"'` opens no string. String
//!   literals stay in the code (guards look for `"/proc/`).
//! - **Test code** is what `#[cfg(test)]` puts under it: the item after the attribute (and
//!   after the attributes that follow it), to the brace that closes it or, for an item without
//!   a body (`use x;`, `mod tests;`), its `;`, braces counted in code only; and the file of a
//!   module so declared (`mod NAME;`: `NAME.rs` or `NAME/mod.rs` beside the declaring module,
//!   or its `#[path]`), with every file under it. Nothing else is test code, whatever its name.

use std::path::{Path, PathBuf};

/// One line of a source file.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// 1-based.
    pub(crate) n: usize,
    /// The line as written.
    pub(crate) text: String,
    /// The line with its comments taken out (string literals kept).
    pub(crate) code: String,
    /// Whether the line is test code (`#[cfg(test)]`, or a test module's file).
    pub(crate) test: bool,
}

/// One `.rs` file under `src/`.
#[derive(Debug)]
pub(crate) struct Source {
    pub(crate) path: PathBuf,
    /// Relative to `src/`, with `/` (`session/signals.rs`).
    pub(crate) rel: String,
    pub(crate) text: String,
    /// Every line of the file.
    pub(crate) lines: Vec<Line>,
}

impl Source {
    /// The production code: lines that are not test code and hold code, as (number, code).
    pub(crate) fn production(&self) -> impl Iterator<Item = &Line> {
        self.lines
            .iter()
            .filter(|l| !l.test && !l.code.trim().is_empty())
    }

    /// All code, test code included: lines that hold code.
    pub(crate) fn code(&self) -> impl Iterator<Item = &Line> {
        self.lines.iter().filter(|l| !l.code.trim().is_empty())
    }

    /// The production code as one text, lines joined by `\n`.
    pub(crate) fn production_text(&self) -> String {
        self.production()
            .map(|l| l.code.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether the whole file is test code (a module declared under `#[cfg(test)]`).
    pub(crate) fn is_test_file(&self) -> bool {
        !self.lines.is_empty() && self.lines.iter().all(|l| l.test)
    }
}

/// Writes `text` at `rel` under `root`, with the directories it needs: the planted trees of
/// the guards' self-tests.
pub(crate) fn plant(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The `src/` tree of this checkout.
pub(crate) fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `root` (a `src/` tree), in path order, read and classified.
pub(crate) fn sources(root: &Path) -> Vec<Source> {
    let mut paths = Vec::new();
    collect(root, &mut paths);
    paths.sort();
    let mut sources: Vec<Source> = paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let lines = classify(&text);
            Source {
                path,
                rel,
                text,
                lines,
            }
        })
        .collect();
    // The files of modules declared under #[cfg(test)], and everything under them.
    let mut test_paths = Vec::new();
    for source in &sources {
        test_paths.extend(test_module_files(root, source));
    }
    for source in &mut sources {
        if test_paths.iter().any(|t| source.path.starts_with(t)) {
            source.lines.iter_mut().for_each(|l| l.test = true);
        }
    }
    sources
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `text`, their code and whether each is test code (test module files aside).
pub(crate) fn classify(text: &str) -> Vec<Line> {
    let (code, bare) = lex(text);
    let mut lines: Vec<Line> = text
        .lines()
        .zip(code)
        .enumerate()
        .map(|(k, (text, code))| Line {
            n: k + 1,
            text: text.to_string(),
            code,
            test: false,
        })
        .collect();
    let mut k = 0;
    while k < lines.len() {
        if lines[k].code.trim() != "#[cfg(test)]" {
            k += 1;
            continue;
        }
        let end = item_end(&bare, k + 1).min(lines.len() - 1);
        for line in &mut lines[k..=end] {
            line.test = true;
        }
        k = end + 1;
    }
    lines
}

/// Each line of `text` as code with comments taken out and the contents of string and
/// character literals blanked: the identifiers a file really uses (`tests/offline/public_surface.rs`
/// reads tests/ and bench/ so, not counting the code its guards plant in strings).
pub(crate) fn bare_lines(text: &str) -> Vec<String> {
    lex(text).1
}

/// The last line of the item that starts after the attribute line before `from` (further
/// attributes skipped): where the braces opened in it close, or its `;` before any brace.
/// `bare` is each line's code with literals blanked, so that only real braces count.
fn item_end(bare: &[String], from: usize) -> usize {
    let mut depth = 0i64;
    let mut opened = false;
    let mut k = from;
    while k < bare.len() && bare[k].trim_start().starts_with("#[") && depth == 0 {
        k += 1;
    }
    while k < bare.len() {
        for c in bare[k].chars() {
            match c {
                '{' | '(' | '[' => {
                    depth += 1;
                    opened |= c == '{';
                }
                '}' | ')' | ']' => {
                    depth -= 1;
                    if c == '}' && opened && depth == 0 {
                        return k;
                    }
                }
                ';' if depth == 0 => return k,
                _ => {}
            }
        }
        k += 1;
    }
    bare.len().saturating_sub(1)
}

/// Each line of `text` with its comments taken out (`code`), and the same with the contents
/// of string and character literals blanked too (`bare`, for counting braces).
fn lex(text: &str) -> (Vec<String>, Vec<String>) {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Str,
        RawStr(usize),
        Block(usize),
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut code, mut bare) = (vec![String::new()], vec![String::new()]);
    let mut state = State::Code;
    let mut i = 0;
    // Pushes code `c` to the current line, and to the bare line unless it is inside a literal.
    let push = |code: &mut Vec<String>, bare: &mut Vec<String>, c: char, lit: bool| {
        code.last_mut().unwrap().push(c);
        bare.last_mut().unwrap().push(if lit { ' ' } else { c });
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            code.push(String::new());
            bare.push(String::new());
            i += 1;
            continue;
        }
        match state {
            State::Code => {
                if c == '/' && next == Some('/') {
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                    continue;
                }
                if c == '/' && next == Some('*') {
                    state = State::Block(1);
                    i += 2;
                    continue;
                }
                let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
                // r"..", r#".."#, br".." (the `b` is pushed as code before).
                if c == 'r' && !ident_before || (c == 'r' && i > 0 && chars[i - 1] == 'b') {
                    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                    if chars.get(i + 1 + hashes) == Some(&'"') {
                        for &h in &chars[i..i + 2 + hashes] {
                            push(&mut code, &mut bare, h, false);
                        }
                        state = State::RawStr(hashes);
                        i += 2 + hashes;
                        continue;
                    }
                }
                if c == '"' {
                    push(&mut code, &mut bare, c, false);
                    state = State::Str;
                    i += 1;
                    continue;
                }
                if c == '\'' {
                    // A character literal: '"', '{', '\'', '\u{7b}'; else a lifetime or label.
                    let len = if next == Some('\\') {
                        chars[i + 2..]
                            .iter()
                            .skip(1)
                            .position(|&q| q == '\'')
                            .map(|p| p + 4)
                    } else if chars.get(i + 2) == Some(&'\'') {
                        Some(3)
                    } else {
                        None
                    };
                    if let Some(len) = len {
                        for (j, &q) in chars[i..i + len].iter().enumerate() {
                            push(&mut code, &mut bare, q, j > 0 && j < len - 1);
                        }
                        i += len;
                        continue;
                    }
                }
                push(&mut code, &mut bare, c, false);
            }
            State::Str => {
                if c == '\\' {
                    push(&mut code, &mut bare, c, true);
                    if let Some(n) = next
                        && n != '\n'
                    {
                        push(&mut code, &mut bare, n, true);
                        i += 2;
                    } else {
                        i += 1;
                    }
                    continue;
                }
                let end = c == '"';
                push(&mut code, &mut bare, c, !end);
                if end {
                    state = State::Code;
                }
            }
            State::RawStr(hashes) => {
                let closes = c == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes;
                if closes {
                    for &h in &chars[i..i + 1 + hashes] {
                        push(&mut code, &mut bare, h, false);
                    }
                    state = State::Code;
                    i += 1 + hashes;
                    continue;
                }
                push(&mut code, &mut bare, c, true);
            }
            State::Block(depth) => {
                if c == '*' && next == Some('/') {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::Block(depth - 1)
                    };
                    i += 2;
                    continue;
                }
                if c == '/' && next == Some('*') {
                    state = State::Block(depth + 1);
                    i += 2;
                    continue;
                }
            }
        }
        i += 1;
    }
    // `str::lines` drops a last empty line after a final newline.
    let lines = text.lines().count();
    code.truncate(lines);
    bare.truncate(lines);
    (code, bare)
}

/// The files and folders of the modules that `source` declares under `#[cfg(test)]`
/// (`mod NAME;`, `pub(crate) mod NAME;`, with or without `#[path = "..."]`).
fn test_module_files(root: &Path, source: &Source) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let lines = &source.lines;
    for (k, line) in lines.iter().enumerate() {
        if line.code.trim() != "#[cfg(test)]" {
            continue;
        }
        let mut at = k + 1;
        let mut path_attr = None;
        while let Some(attr) = lines
            .get(at)
            .map(|l| l.code.trim())
            .filter(|a| a.starts_with("#["))
        {
            if let Some(p) = attr
                .strip_prefix("#[path = \"")
                .and_then(|p| p.strip_suffix("\"]"))
            {
                path_attr = Some(p.to_string());
            }
            at += 1;
        }
        let Some(item) = lines.get(at) else { continue };
        let words: Vec<&str> = item.code.split_whitespace().collect();
        let Some(name) = (match words.as_slice() {
            ["mod", name] => name.strip_suffix(';'),
            [vis, "mod", name] if vis.starts_with("pub") => name.strip_suffix(';'),
            _ => None,
        }) else {
            continue;
        };
        let file = &source.path;
        let parent = file.parent().unwrap();
        if let Some(p) = path_attr {
            let declared = parent.join(p);
            assert!(
                declared.is_file(),
                "{}: #[path] names no file",
                file.display()
            );
            out.push(declared.with_extension(""));
            out.push(declared);
            continue;
        }
        // The folder holding the declaring module's children.
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let dir = if ["mod", "lib", "main"].contains(&stem) && parent.starts_with(root) {
            parent.to_path_buf()
        } else {
            parent.join(stem)
        };
        let (as_file, as_dir) = (dir.join(format!("{name}.rs")), dir.join(name));
        assert!(
            as_file.is_file() || as_dir.join("mod.rs").is_file(),
            "{}: #[cfg(test)] mod {name}; names no file",
            file.display()
        );
        // NAME.rs and its children's folder NAME/, or NAME/ with its mod.rs.
        out.push(as_file);
        out.push(as_dir);
    }
    out
}

/// The scanner itself, on strings: what is code and what is test code.
#[test]
fn comments_are_not_code_and_literals_are() {
    let lines = classify(
        "let u = \"http://x\"; // a comment\n/* a block\n   comment */ let q = '\"'; let s = \"//\";\nlet r = r#\"a \" // b\"#; /* c */ f(); // d\n/// doc File::create(p)\nlet c = '{'; let l: &'a str = x; // '\n",
    );
    let code: Vec<&str> = lines.iter().map(|l| l.code.trim()).collect();
    assert_eq!(
        code,
        [
            "let u = \"http://x\";",
            "",
            "let q = '\"'; let s = \"//\";",
            "let r = r#\"a \" // b\"#;  f();",
            "",
            "let c = '{'; let l: &'a str = x;",
        ]
    );
}

#[test]
fn test_items_end_where_their_braces_close() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() {\n        let s = \"}\";\n        let c = '}';\n    }\n}\nfn b() {}\n#[cfg(test)]\nuse x::y;\nfn c() {}\n#[cfg(test)]\n#[allow(dead_code)]\npub(crate) fn helper(\n    a: u8,\n) -> u8 {\n    a\n}\nfn d() { let x = [1; 3]; }\n#[cfg(test)]\nmod t { const X: &str = \"/run\"; }\nfn e() {}\n";
    let lines = classify(text);
    let production: Vec<&str> = lines
        .iter()
        .filter(|l| !l.test)
        .map(|l| l.text.as_str())
        .collect();
    assert_eq!(
        production,
        [
            "fn a() {}",
            "fn b() {}",
            "fn c() {}",
            "fn d() { let x = [1; 3]; }",
            "fn e() {}"
        ]
    );
}

#[test]
fn test_module_files_are_test_code_whatever_their_names() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| plant(root, rel, text);
    write(
        "load/mod.rs",
        "#[cfg(test)]\nmod tests;\nmod helper;\nmod other_tests;\n#[cfg(test)]\npub(crate) mod fixtures;\n",
    );
    write("load/tests.rs", "x\n");
    write("load/tests/deeper.rs", "x\n");
    write("load/fixtures/mod.rs", "x\n");
    write("load/helper.rs", "x\n");
    write("load/other_tests.rs", "x\n");
    write(
        "session/start.rs",
        "fn f() {}\n#[cfg(test)]\n#[path = \"start_tests.rs\"]\nmod tests;\n",
    );
    write("session/start_tests.rs", "x\n");
    let tested: Vec<(String, bool)> = sources(root)
        .iter()
        .map(|s| (s.rel.clone(), s.is_test_file()))
        .collect();
    assert_eq!(
        tested,
        [
            ("load/fixtures/mod.rs".to_string(), true),
            ("load/helper.rs".into(), false),
            ("load/mod.rs".into(), false),
            ("load/other_tests.rs".into(), false),
            ("load/tests/deeper.rs".into(), true),
            ("load/tests.rs".into(), true),
            ("session/start.rs".into(), false),
            ("session/start_tests.rs".into(), true),
        ]
    );
}
