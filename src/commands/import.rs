//! `jitterlab import`: another tool's output to a result directory. The format is the one
//! given (`--format`) or recognised (`results::import::detect`); the parsing, the checks and the
//! writing are `results::import`'s. Text formats get the file as cleaned text, binary formats
//! (jitterdebugger's samples.raw) its bytes.

use crate::cli::{ImportArgs, ImportFormat};
use crate::error::{Failure, Result};
use crate::results::ResultDir;
use crate::results::import::{
    Input, MAX_BINARY_FILE_BYTES, MAX_FILE_BYTES, Parser, SOURCE_FORMATS, SourceFormat, detect,
    detect_binary, is_binary, parse_checked, pasted, summary, write_result,
};
use std::path::PathBuf;

pub fn run(args: &ImportArgs) -> Result<i32> {
    let file = args.file.display();
    let unreadable = |e: crate::input::ReadError| {
        Failure::usage(format!(
            "{file}: {e}; give the file of a tool listed in docs/import.md"
        ))
    };
    let bytes = crate::input::read_bytes(&args.file, MAX_BINARY_FILE_BYTES).map_err(unreadable)?;
    // The text a text format reads: at most MAX_FILE_BYTES, UTF-8, cleaned of what pasting adds.
    let text = |bytes: &[u8]| -> Result<String> {
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(unreadable(crate::input::ReadError::TooLarge {
                max_bytes: MAX_FILE_BYTES,
            }));
        }
        let text = crate::input::text_from_bytes(bytes.to_vec()).map_err(unreadable)?;
        pasted::clean(&text).map_err(|why| Failure::usage(format!("{file}: not imported: {why}")))
    };
    let not_recognised = |why: String| {
        Failure::usage(format!(
            "{file}: not a format jitterlab imports: {why}; accepted: {} (see docs/import.md)",
            SOURCE_FORMATS
                .iter()
                .map(|f| format!("{} ({})", f.name, f.help))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    };
    let mut cleaned = None;
    let format: &'static SourceFormat = match args.format {
        ImportFormat::Named(format) => format,
        ImportFormat::Auto if is_binary(&bytes) => detect_binary(&bytes).map_err(not_recognised)?,
        ImportFormat::Auto => detect(cleaned.insert(text(&bytes)?)).map_err(not_recognised)?,
    };
    let parsed = match format.parse {
        Parser::Text(_) => {
            let text = match cleaned {
                Some(text) => text,
                None => text(&bytes)?,
            };
            parse_checked(format, Input::Text(&text))
        }
        Parser::Bytes(_) => parse_checked(format, Input::Bytes(&bytes, &args.file)),
    };
    let imported = parsed
        .map_err(|why| Failure::usage(format!("{file}: read as {}, but {why}", format.name())))?;
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
