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
    let file = crate::error::display_path(&args.file);
    let unreadable = |e: crate::input::ReadError| {
        Failure::usage(format!(
            "{file}: {e}; give the file of a tool listed in docs/import.md"
        ))
    };
    // Under auto the text cap applies: only a named binary format reads more.
    let cap = match args.format {
        ImportFormat::Named(format) => format.parse.max_file_bytes(),
        ImportFormat::Auto => MAX_FILE_BYTES,
    };
    let bytes = crate::input::read_bytes(&args.file, cap).map_err(|e| match e {
        crate::input::ReadError::TooLarge { .. } if cap < MAX_BINARY_FILE_BYTES => Failure::usage(format!(
            "{file}: {e}; give the file of a tool listed in docs/import.md (a jitterdebugger samples.raw of up to {} is read with --format jitterdebugger-samples)",
            crate::input::format_bytes(MAX_BINARY_FILE_BYTES)
        )),
        e => unreadable(e),
    })?;
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
        // A binary file whose layout fits; any other file with NUL bytes is read as text, which
        // says what is wrong with it (a text output with a stray NUL still imports).
        ImportFormat::Auto if is_binary(&bytes) && detect_binary(&bytes).is_ok() => {
            detect_binary(&bytes).map_err(not_recognised)?
        }
        ImportFormat::Auto => {
            // Why a file with NUL bytes is not a samples.raw, said beside the text's reason.
            let binary = || detect_binary(&bytes).err().filter(|_| is_binary(&bytes));
            let read = text(&bytes).map_err(|e| binary().map_or(e, &not_recognised))?;
            detect(cleaned.insert(read)).map_err(|why| match binary() {
                Some(binary) => not_recognised(format!("{why}; {binary}")),
                None => not_recognised(why),
            })?
        }
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
