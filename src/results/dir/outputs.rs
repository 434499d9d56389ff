//! The checks of output paths (`report -o`, `export -o`, `--plots`): made before anything is
//! written, and refusing a result directory's own files, also through a link.

use super::*;

/// The names a result directory (holding run.json) or a sweep directory (holding sweep.json)
/// uses for its own files and folders.
pub(super) fn is_own_file(name: &OsStr) -> bool {
    use crate::record::{hlog, samplelog};
    [
        RUN_JSON,
        ".run.json.tmp",
        hlog::FILE_NAME,
        samplelog::FILE_NAME,
        crate::results::events::FILE_NAME,
        crate::runner::loads::SCENARIO_COPY,
        crate::load::supervisor::LOG_DIR,
        crate::results::sweep::FILE_NAME,
        crate::results::sweep::CSV_FILE_NAME,
    ]
    .iter()
    .any(|own| OsStr::new(own) == name)
        || name
            .to_str()
            .and_then(crate::results::format::segments::parse_file_name)
            .is_some()
}

/// Whether `dir` is a result directory or a sweep directory.
pub(super) fn is_result_dir(dir: &Path) -> bool {
    dir.join(RUN_JSON).is_file() || dir.join(crate::results::sweep::FILE_NAME).is_file()
}

/// Checks an output file path before anything is read or written (exit 2): its name is not
/// too long, it is not a directory, its directory exists, and it is not one of a result
/// directory's own files (`report RUN -o RUN/run.json` would destroy the run), also when
/// reached through a link.
pub fn check_output_file(path: &Path, option: &str) -> Result<(), Failure> {
    let refuse = |why: String| {
        Failure::usage(format!(
            "{option} {}: {why}; pass {option} with another file",
            path.display()
        ))
    };
    check_name_lengths(path).map_err(refuse)?;
    if path.is_dir() {
        return Err(refuse("is a directory".into()));
    }
    // The file as it will really be written: links resolved.
    let real = match fs::canonicalize(path) {
        Ok(real) => real,
        Err(_) => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let Some(name) = path.file_name() else {
                return Err(refuse("names no file".into()));
            };
            match fs::canonicalize(parent) {
                Ok(p) if p.is_dir() => p.join(name),
                _ => {
                    return Err(refuse(format!(
                        "its directory {} does not exist",
                        parent.display()
                    )));
                }
            }
        }
    };
    if let (Some(dir), Some(name)) = (real.parent(), real.file_name()) {
        let in_own_folder = dir.parent().is_some_and(is_result_dir)
            && dir.file_name() == Some(OsStr::new(crate::load::supervisor::LOG_DIR));
        if (is_result_dir(dir) && is_own_file(name)) || in_own_folder {
            return Err(refuse(format!(
                "is a file of the result directory {} (writing it would destroy the results)",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Checks an output directory path that is made if missing (`report --plots DIR`) before
/// anything is written (exit 2): names not too long, not an existing non-directory, and its
/// nearest existing ancestor a directory.
pub fn check_output_dir(path: &Path, option: &str) -> Result<(), Failure> {
    let refuse = |why: String| {
        Failure::usage(format!(
            "{option} {}: {why}; pass {option} with a directory (made if missing)",
            path.display()
        ))
    };
    check_name_lengths(path).map_err(refuse)?;
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
        match fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => return Err(refuse(format!("{} is not a directory", p.display()))),
            Err(_) if fs::symlink_metadata(p).is_ok() => {
                return Err(refuse(format!("{} is a dangling link", p.display())));
            }
            Err(_) => at = p.parent(),
        }
    }
    Ok(())
}

/// NAME_MAX and PATH_MAX of Linux, checked before anything is written.
pub(super) fn check_name_lengths(path: &Path) -> Result<(), String> {
    if path.as_os_str().len() > 4095 {
        return Err("the path is longer than 4095 bytes".into());
    }
    match path.iter().find(|c| c.len() > 255) {
        Some(c) => Err(format!(
            "the name '{}...' is longer than 255 bytes",
            String::from_utf8_lossy(&c.as_bytes()[..40])
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn output_files_of_a_result_directory_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let run = base.path().join("run");
        fs::create_dir_all(run.join("loads")).unwrap();
        fs::write(run.join(RUN_JSON), "{}").unwrap();
        symlink(run.join(RUN_JSON), base.path().join("link")).unwrap();
        for bad in [
            run.join(RUN_JSON),
            run.join("latency.hlog"),
            run.join("loads/1-cpu.log"),
            base.path().join("link"),
        ] {
            let e = check_output_file(&bad, "-o").unwrap_err();
            assert!(e.message.contains("would destroy"), "{}", e.message);
        }
        assert!(check_output_file(&run.join("report.html"), "-o").is_ok());
        assert!(check_output_file(&base.path().join("r.html"), "-o").is_ok());
        for bad in [run.clone(), base.path().join("missing/r.html")] {
            assert!(check_output_file(&bad, "-o").is_err(), "{}", bad.display());
        }
        assert!(check_output_dir(&base.path().join("plots/deeper"), "--plots").is_ok());
        let e = check_output_dir(&run.join("run.json/plots"), "--plots").unwrap_err();
        assert!(e.message.contains("not a directory"), "{}", e.message);
        let long = base.path().join("y".repeat(256));
        assert!(check_output_dir(&long, "--plots").is_err());
        assert!(check_output_file(&long, "-o").is_err());
    }
}
