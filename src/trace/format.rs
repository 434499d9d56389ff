//! The kernel's own description of its trace data: `events/header_page` (the ring-buffer page
//! header), `events/header_event` (the event header bit layout and its reserved type values) and
//! `events/<system>/<event>/format` (each event's id and field offsets, sizes and signedness).
//!
//! Everything the page parser and the event decoder need is taken from these files; what they
//! do not say (the two missed-events flag bits of the page's commit word) is named in
//! [`super::page`].

use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// One field of an event or of the page header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The C type as declared, e.g. `pid_t`, `char[16]`, `__data_loc char[]`.
    pub(crate) type_name: String,
    pub offset: usize,
    pub size: usize,
    pub(crate) signed: bool,
}

impl Field {
    /// A `__data_loc` field holds a 32-bit locator of variable-length data (offset in the low
    /// 16 bits, length in the high 16 bits) instead of the data itself.
    pub(crate) fn is_data_loc(&self) -> bool {
        self.type_name.starts_with("__data_loc")
    }

    /// The field read as an integer (sign-extended when the format says signed), or None when
    /// the record is too short or the field is wider than 8 bytes.
    pub fn int(&self, record: &[u8]) -> Option<i64> {
        let bytes = record.get(self.offset..self.offset + self.size)?;
        Some(match (self.size, self.signed) {
            (1, true) => i8::from_ne_bytes([bytes[0]]) as i64,
            (1, false) => bytes[0] as i64,
            (2, true) => i16::from_ne_bytes(bytes.try_into().ok()?) as i64,
            (2, false) => u16::from_ne_bytes(bytes.try_into().ok()?) as i64,
            (4, true) => i32::from_ne_bytes(bytes.try_into().ok()?) as i64,
            (4, false) => u32::from_ne_bytes(bytes.try_into().ok()?) as i64,
            (8, _) => i64::from_ne_bytes(bytes.try_into().ok()?),
            _ => return None,
        })
    }

    /// The field as an unsigned 64-bit value (pointers, u64 counters).
    pub(crate) fn uint(&self, record: &[u8]) -> Option<u64> {
        self.int(record).map(|v| match self.size {
            8 => v as u64,
            _ if self.signed => v as u64,
            _ => v as u64 & ((1u64 << (self.size * 8)) - 1),
        })
    }

    /// A string field: a fixed `char[N]` array, or a `__data_loc char[]`; up to the first NUL.
    pub fn str<'a>(&self, record: &'a [u8]) -> Option<&'a [u8]> {
        let bytes = if self.is_data_loc() {
            let loc = self.int(record)? as u32;
            let (offset, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
            record.get(offset..offset + len)?
        } else if self.size == 0 {
            // A trailing flexible array (`char buf[]`): the rest of the record.
            record.get(self.offset..)?
        } else {
            record.get(self.offset..self.offset + self.size)?
        };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(&bytes[..end])
    }
}

/// One event's format file.
#[derive(Debug, Clone)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    /// The `common_type` value of this event's records.
    pub id: u16,
    pub fields: Vec<Field>,
    pub(crate) print_fmt: String,
}

impl EventFormat {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Like [`EventFormat::field`], with an error that names the event and the field.
    pub(crate) fn require(&self, name: &str) -> Result<Field, String> {
        self.field(name).cloned().ok_or_else(|| {
            format!(
                "event {}/{} has no field '{name}' in its format file; this kernel's tracepoint differs from what jitterlab knows",
                self.system, self.name
            )
        })
    }

    /// The value-to-name table of the first `__print_symbolic(...)` in the print format, e.g.
    /// softirq vectors `{ 0, "HI" }, { 1, "TIMER" }, ...`. Empty when there is none.
    pub(crate) fn symbols(&self) -> Vec<(i64, String)> {
        let Some(start) = self.print_fmt.find("__print_symbolic(") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut rest = &self.print_fmt[start..];
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            let entry = &rest[open + 1..open + close];
            if let Some((value, name)) = entry.split_once(',') {
                let name = name.trim().trim_matches('"');
                if let Ok(v) = parse_c_int(value.trim()) {
                    out.push((v, name.to_string()));
                }
            }
            rest = &rest[open + close + 1..];
            // The symbolic list ends at the closing parenthesis after the last pair.
            if rest.trim_start().starts_with(')') {
                break;
            }
        }
        out
    }
}

fn parse_c_int(text: &str) -> Result<i64, std::num::ParseIntError> {
    match text.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16),
        None => text.parse(),
    }
}

/// Parses a `field:TYPE NAME;\toffset:O;\tsize:S;\tsigned:G;` line (the space after `field:` in
/// header_page is optional).
fn parse_field_line(line: &str) -> Option<Field> {
    let line = line.trim().strip_prefix("field:")?;
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        } else if decl.is_none() && !part.is_empty() {
            decl = Some(part.to_string());
        }
    }
    let decl = decl?;
    // The name is the last word, without an array suffix: `char prev_comm[16]`, `char buf[]`,
    // `__data_loc char[] name`.
    let last = decl.split_whitespace().last()?;
    let name = last.split('[').next()?.to_string();
    let type_name = if last.contains('[') {
        format!(
            "{}{}",
            decl[..decl.len() - last.len()].trim(),
            &last[name.len()..]
        )
    } else {
        decl[..decl.len() - last.len()].trim().to_string()
    };
    Some(Field {
        name,
        type_name,
        offset: offset?,
        size: size?,
        signed,
    })
}

/// Parses the text of an event's `format` file.
pub(crate) fn parse_event_format(system: &str, text: &str) -> Result<EventFormat, String> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut print_fmt = String::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            id = v.trim().parse::<u16>().ok();
        } else if let Some(v) = line.strip_prefix("print fmt:") {
            print_fmt = v.trim().to_string();
        } else if let Some(f) = parse_field_line(line) {
            fields.push(f);
        }
    }
    let name = name.ok_or("no 'name:' line")?;
    Ok(EventFormat {
        system: system.to_string(),
        id: id.ok_or_else(|| format!("event {system}/{name}: no numeric 'ID:' line"))?,
        name,
        fields,
        print_fmt,
    })
}

/// The ring-buffer page header, from `events/header_page`.
#[derive(Debug, Clone)]
pub struct HeaderPage {
    /// The page's absolute timestamp: the base of its first event's delta.
    pub(crate) timestamp: Field,
    /// Bytes of event data committed on the page, with the missed-events flags in its high bits.
    pub(crate) commit: Field,
    /// Where event data begins; offset + size is the page (sub-buffer) size.
    pub data: Field,
}

impl HeaderPage {
    pub fn parse(text: &str) -> Result<Self, String> {
        let fields: Vec<Field> = text.lines().filter_map(parse_field_line).collect();
        let get = |name: &str| {
            fields
                .iter()
                .find(|f| f.name == name)
                .cloned()
                .ok_or_else(|| format!("header_page has no '{name}' field"))
        };
        Ok(HeaderPage {
            timestamp: get("timestamp")?,
            commit: get("commit")?,
            data: get("data")?,
        })
    }

    /// The size of one page as read from trace_pipe_raw.
    pub fn page_size(&self) -> usize {
        self.data.offset + self.data.size
    }
}

/// The event header layout and its reserved type values, from `events/header_event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderEvent {
    pub(crate) type_len_bits: u32,
    pub(crate) time_delta_bits: u32,
    pub(crate) padding: u32,
    pub(crate) time_extend: u32,
    pub(crate) time_stamp: u32,
    /// type_len values 1..=this are data events of type_len * 4 bytes; 0 means "length in
    /// `array[0]`".
    pub(crate) data_max_type_len: u32,
}

impl HeaderEvent {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut map: HashMap<String, u32> = HashMap::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some((key, value)) = line.split_once(':') {
                let key = key.trim();
                let value = value.trim();
                if let Some(bits) = value.strip_suffix("bits") {
                    if let Ok(b) = bits.trim().parse() {
                        map.insert(key.to_string(), b);
                    }
                } else if let Some(t) = value.strip_prefix("type ==")
                    && let Ok(t) = t.trim().parse()
                {
                    map.insert(key.to_string(), t);
                }
            } else if let Some(v) = line.strip_prefix("data max type_len")
                && let Ok(t) = v.trim().trim_start_matches("==").trim().parse()
            {
                map.insert("data_max".into(), t);
            }
        }
        let get = |k: &str| {
            map.get(k)
                .copied()
                .ok_or_else(|| format!("header_event does not give '{k}'"))
        };
        Ok(HeaderEvent {
            type_len_bits: get("type_len")?,
            time_delta_bits: get("time_delta")?,
            padding: get("padding")?,
            time_extend: get("time_extend")?,
            time_stamp: get("time_stamp")?,
            data_max_type_len: get("data_max")?,
        })
    }
}

/// Reads a tracefs file whole. Some of them (events/header_page) answer only the first read
/// of an open file, so a small first read, as `fs::read_to_string` makes on files whose size
/// shows as 0, would cut them short: read with a buffer larger than any of them.
pub(crate) fn read_tracefs_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = fs::File::open(path)?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..])? {
            0 => break,
            n => len += n,
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The formats of a tracefs directory (the mount point, an instance, or a captured copy with
/// the same `events/` layout).
#[derive(Debug, Clone)]
pub struct Formats {
    pub header_page: HeaderPage,
    pub(crate) header_event: HeaderEvent,
}

impl Formats {
    /// Reads `events/header_page` and `events/header_event` under `root`.
    pub fn load(root: &Path) -> Result<Self, String> {
        let read = |name: &str| {
            let path = root.join("events").join(name);
            read_tracefs_file(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        Ok(Formats {
            header_page: HeaderPage::parse(&read("header_page")?)
                .map_err(|e| format!("{}/events/header_page: {e}", root.display()))?,
            header_event: HeaderEvent::parse(&read("header_event")?)
                .map_err(|e| format!("{}/events/header_event: {e}", root.display()))?,
        })
    }
}

/// Reads `events/<system>/<event>/format` under `root`.
pub fn load_event(root: &Path, system: &str, event: &str) -> Result<EventFormat, String> {
    let path = root.join("events").join(system).join(event).join("format");
    let text =
        read_tracefs_file(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_event_format(system, &text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:64;\tsize:4;\tsigned:0;

print fmt: \"prev_comm=%s\", REC->prev_comm
";

    #[test]
    fn parses_fields_with_types_offsets_and_signedness() {
        let f = parse_event_format("sched", SWITCH).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        let comm = f.field("prev_comm").unwrap();
        assert_eq!(
            (comm.offset, comm.size, comm.type_name.as_str()),
            (8, 16, "char[16]")
        );
        let pid = f.field("prev_pid").unwrap();
        assert!(pid.signed);
        assert_eq!(pid.type_name, "pid_t");
        let loc = f.field("name").unwrap();
        assert!(loc.is_data_loc());
        assert!(f.require("next_pid").unwrap_err().contains("next_pid"));
    }

    #[test]
    fn reads_integers_and_strings_by_format() {
        let f = parse_event_format("sched", SWITCH).unwrap();
        let mut rec = vec![0u8; 80];
        rec[8..13].copy_from_slice(b"spike");
        rec[24..28].copy_from_slice(&(-7i32).to_ne_bytes());
        rec[64..68].copy_from_slice(&(72u32 | (3 << 16)).to_ne_bytes());
        rec[72..75].copy_from_slice(b"ab\0");
        assert_eq!(f.field("prev_comm").unwrap().str(&rec).unwrap(), b"spike");
        assert_eq!(f.field("prev_pid").unwrap().int(&rec), Some(-7));
        assert_eq!(f.field("name").unwrap().str(&rec).unwrap(), b"ab");
        assert_eq!(f.field("prev_pid").unwrap().int(&rec[..20]), None);
    }

    #[test]
    fn reads_the_symbol_table_of_the_print_format() {
        let f = parse_event_format(
            "irq",
            "name: softirq_entry\nID: 223\nformat:\n\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n\nprint fmt: \"vec=%u [action=%s]\", REC->vec, __print_symbolic(REC->vec, { 0, \"HI\" }, { 1, \"TIMER\" }, { 9, \"RCU\" })\n",
        )
        .unwrap();
        assert_eq!(
            f.symbols(),
            vec![(0, "HI".into()), (1, "TIMER".into()), (9, "RCU".into())]
        );
    }

    #[test]
    fn parses_the_headers() {
        let page = HeaderPage::parse(
            "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
        )
        .unwrap();
        assert_eq!(page.page_size(), 4096);
        assert_eq!(page.commit.size, 8);
        let ev = HeaderEvent::parse(
            "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n",
        )
        .unwrap();
        assert_eq!(
            ev,
            HeaderEvent {
                type_len_bits: 5,
                time_delta_bits: 27,
                padding: 29,
                time_extend: 30,
                time_stamp: 31,
                data_max_type_len: 28
            }
        );
    }
}
