//! `jitterlab import`: another tool's output to a result directory. The format is the one
//! given (`--format`) or recognised (`results::import::detect`); the parsing, the checks and the
//! writing are `results::import`'s. Text formats get the file as cleaned text, binary formats
//! (jitterdebugger's samples.raw) its bytes. rtla hist output saved without its column line is
//! read with the columns the user names (`--cpus`, `--columns`, `--time-unit`).

use crate::cli::{ImportArgs, ImportFormat};
use crate::error::{Failure, Result};
use crate::results::ResultDir;
use crate::results::import::{
    Input, MAX_BINARY_FILE_BYTES, MAX_FILE_BYTES, NoHeaderLayout, Parser, SOURCE_FORMATS,
    SourceFormat, detect, detect_binary, is_binary, parse_checked, parse_no_header_checked, pasted,
    summary, write_result,
};
use std::path::PathBuf;

pub fn run(args: &ImportArgs) -> Result<i32> {
    let file = crate::error::display_path(&args.file);
    let no_header = no_header_layout(args)?;
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
    let format: &'static SourceFormat = match (&no_header, args.format) {
        // The columns named: the text must be none of the formats recognised, which name
        // their own (the no-header form is refused by detection, with the hint to name them).
        (Some((format, _)), _) => {
            let read = text(&bytes)?;
            if let Ok(named) = detect(&read) {
                return Err(Failure::usage(format!(
                    "{file}: it is {} output, which names its own columns: import it without --cpus and --columns",
                    named.name()
                )));
            }
            cleaned = Some(read);
            format
        }
        (None, format) => match format {
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
        },
    };
    let parsed = match (format.parse, &no_header) {
        (Parser::Text(_), Some((_, layout))) => {
            let text = cleaned.expect("read above");
            parse_no_header_checked(format, &text, layout)
        }
        (Parser::Text(_), None) => {
            let text = match cleaned {
                Some(text) => text,
                None => text(&bytes)?,
            };
            parse_checked(format, Input::Text(&text))
        }
        (Parser::Bytes(_), _) => parse_checked(format, Input::Bytes(&bytes, &args.file)),
    };
    let imported = parsed
        .map_err(|why| Failure::usage(format!("{file}: read as {}, but {why}", format.name())))?;
    // Made new (an existing name is refused, exit 2); removed again if the import fails. The
    // default name's ./jitterlab-results must be safe from other users, as `run`'s.
    let (out, claim) = match &args.out {
        Some(out) => (out.clone(), ResultDir::create(out, "import --out")?),
        None => {
            let stem = args
                .file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "source".into());
            let out = PathBuf::from("jitterlab-results").join(format!("imported-{stem}"));
            let claim = ResultDir::create_default(&out, "import --out")?;
            (out, claim)
        }
    };
    let record = write_result(&imported, &args.file, claim.dir())?;
    claim.keep();
    crate::stdout::write(&summary(&record, &out))?;
    Ok(0)
}

/// `--cpus` and `--columns` (and `--time-unit`): the format whose output without its column
/// line holds those columns, and their layout; None when they are not given (clap requires
/// them together). The columns are named in rtla's order: each row of the file is then checked
/// to hold CPUs x columns values (`results::import::rtla_hist`).
fn no_header_layout(args: &ImportArgs) -> Result<Option<(&'static SourceFormat, NoHeaderLayout)>> {
    let (Some(cpus_given), Some(columns_given)) = (&args.cpus, &args.columns) else {
        return Ok(None);
    };
    let readers: Vec<(&'static SourceFormat, &'static [&'static str])> = SOURCE_FORMATS
        .iter()
        .filter_map(|f| Some((*f, f.no_header?.columns)))
        .collect();
    let offered = || {
        readers
            .iter()
            .map(|(f, columns)| format!("{} ({})", columns.join(",").to_lowercase(), f.name()))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    if let ImportFormat::Named(f) = args.format
        && f.no_header.is_none()
    {
        return Err(Failure::usage(format!(
            "--cpus and --columns name the columns of rtla hist output saved with --no-header ({}); {} output is read as it is",
            readers
                .iter()
                .map(|(f, _)| f.name())
                .collect::<Vec<_>>()
                .join(", "),
            f.name()
        )));
    }
    let cpus = crate::cpulist::parse_cpu_list(cpus_given)
        .map_err(|e| Failure::usage(format!("--cpus {cpus_given}: {e}")))?;
    let wanted: Vec<&str> = columns_given.split(',').map(str::trim).collect();
    // The format whose columns include every one named (under --format, that format's).
    let found = readers.iter().find(|(f, columns)| {
        matches!(args.format, ImportFormat::Named(n) if n == *f)
            || matches!(args.format, ImportFormat::Auto)
                && wanted
                    .iter()
                    .all(|w| columns.iter().any(|c| c.eq_ignore_ascii_case(w)))
    });
    let Some(&(format, columns)) = found else {
        return Err(Failure::usage(format!(
            "--columns {columns_given}: not the columns of one rtla hist output; give {}",
            offered()
        )));
    };
    // Each named once, in the order rtla prints them.
    let mut at = Vec::new();
    for w in &wanted {
        match columns.iter().position(|c| c.eq_ignore_ascii_case(w)) {
            Some(p) if at.last().is_none_or(|&last| p > last) => at.push(p),
            _ => {
                return Err(Failure::usage(format!(
                    "--columns {columns_given}: {} prints its columns once each, in the order {}: give them so (e.g. {})",
                    format.name(),
                    columns.join(",").to_lowercase(),
                    columns[..columns.len().min(2)].join(",").to_lowercase()
                )));
            }
        }
    }
    let layout = NoHeaderLayout {
        cpus,
        columns: at.iter().map(|&p| columns[p]).collect(),
        cpus_given: cpus_given.clone(),
        columns_given: columns_given.clone(),
        unit_ns: if args.time_unit.as_deref() == Some("ns") {
            1
        } else {
            1000
        },
    };
    Ok(Some((format, layout)))
}
