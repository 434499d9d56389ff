//! `jitterlab import`: another tool's output to a result directory. The format is the one
//! given (`--format`) or recognised (`results::import::detect`); the parsing, the checks and the
//! writing are `results::import`'s.

use crate::cli::{ImportArgs, ImportFormat};
use crate::error::{Failure, Result};
use crate::results::ResultDir;
use crate::results::import::{
    MAX_FILE_BYTES, SOURCE_FORMATS, detect, parse_checked, pasted, summary, write_result,
};
use std::path::PathBuf;

pub fn run(args: &ImportArgs) -> Result<i32> {
    let text = crate::input::read_text(&args.file, MAX_FILE_BYTES).map_err(|e| {
        Failure::usage(format!(
            "{}: {e}; give the file of a tool listed in docs/import.md",
            args.file.display()
        ))
    })?;
    let text = pasted::clean(&text)
        .map_err(|why| Failure::usage(format!("{}: not imported: {why}", args.file.display())))?;
    let format = match args.format {
        ImportFormat::Named(format) => format,
        ImportFormat::Auto => detect(&text).map_err(|why| {
            Failure::usage(format!(
                "{}: not a format jitterlab imports: {why}; accepted: {} (see docs/import.md)",
                args.file.display(),
                SOURCE_FORMATS
                    .iter()
                    .map(|f| format!("{} ({})", f.name, f.help))
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        })?,
    };
    let imported = parse_checked(format, &text).map_err(|why| {
        Failure::usage(format!(
            "{}: read as {}, but {why}",
            args.file.display(),
            format.name()
        ))
    })?;
    let out = match &args.out {
        Some(out) => out.clone(),
        None => {
            let stem = args
                .file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "source".into());
            PathBuf::from("jitterlab-results").join(format!("imported-{stem}"))
        }
    };
    // Made new (an existing name is refused, exit 2); removed again if the import fails.
    let claim = ResultDir::create(&out, "import --out")?;
    let record = write_result(&imported, &args.file, claim.dir())?;
    claim.keep();
    print!("{}", summary(&record, &out));
    Ok(0)
}
