//! /proc/kallsyms: the kernel's symbol table, read for the culprits' kernel stacks of late
//! wakeups (`Kind::KernelStack`, BPF back end), each frame named `function+0xoff`.
//!
//! The table keeps the kernel's text symbols (types `t` and `T`, the core kernel's and the
//! loaded modules'), sorted by address; a frame is named by the last symbol at or before it
//! (a binary search). kallsyms gives no symbol sizes: a frame before the first symbol, or more
//! than [`MAX_FUNCTION_BYTES`] after its symbol (past the last symbol: a module loaded after
//! the table was read), keeps its hex address rather than a wrong name. Where the kernel hides
//! the addresses (`kernel.kptr_restrict`, or a reader without CAP_SYSLOG: every address is 0)
//! or the file cannot be read, no frame has a name, and [`Symbols::unavailable`] says why.
//!
//! The table is read once per process, lazily: [`Symbols::shared`] reads it when the first
//! stack is named, or when the BPF back end looks up the timer callbacks its expiries are
//! filtered by ([`Symbols::addresses_of`]), so a run on the tracefs back end never reads the
//! 5 MB file and a BPF run reads it once.

use std::sync::OnceLock;

/// The file read.
const PATH: &str = "/proc/kallsyms";

/// A frame further than this past its symbol is not named by it (the largest kernel function
/// is far smaller; beyond the last symbol, kallsyms says nothing of where text ends).
pub(crate) const MAX_FUNCTION_BYTES: u64 = 0x10_0000;

/// One line of kallsyms: address, type letter, name, and the module in brackets if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub(crate) address: u64,
    pub kind: &'a str,
    pub name: &'a str,
    pub module: Option<&'a str>,
}

impl Line<'_> {
    /// A text (code) symbol: where a stack's frames point.
    pub(crate) fn is_text(&self) -> bool {
        matches!(self.kind, "t" | "T")
    }
}

/// One line of kallsyms (`ffffffff81000000 T _stext`, `... t fn\t[module]`), or None when
/// it does not parse. The one parser of the format.
pub(crate) fn line(line: &str) -> Option<Line<'_>> {
    let mut f = line.split_ascii_whitespace();
    let address = u64::from_str_radix(f.next()?, 16).ok()?;
    let kind = f.next()?;
    let name = f.next()?;
    let module = f
        .next()
        .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'));
    Some(Line {
        address,
        kind,
        name,
        module,
    })
}

/// The lines of a kallsyms text; lines that do not parse are skipped.
#[cfg(test)]
pub(crate) fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    text.lines().filter_map(line)
}

/// One text symbol of the table: its address, its name (a range of `Symbols::names`) and its
/// module (an index into `Symbols::modules`, `u32::MAX` for the core kernel).
#[derive(Debug, Clone, Copy)]
struct Entry {
    address: u64,
    name_from: u32,
    name_len: u32,
    module: u32,
}

const CORE: u32 = u32::MAX;

/// The kernel's text symbols, sorted by address (names packed in one string: this machine's
/// 121 814 text symbols take about 5.9 MB, 24 bytes each and 3 MB of names, rather than one
/// allocation each).
#[derive(Debug, Default)]
pub(crate) struct Symbols {
    entries: Vec<Entry>,
    names: String,
    modules: Vec<String>,
    /// Why no frame can be named, when none can.
    unavailable: Option<String>,
}

/// A table being built from kallsyms lines, in the order read.
#[derive(Default)]
struct TableBuilder {
    symbols: Symbols,
    text_symbols: u64,
    zero: u64,
}

impl TableBuilder {
    fn add(&mut self, l: &Line) {
        if !l.is_text() {
            return;
        }
        self.text_symbols += 1;
        if l.address == 0 {
            self.zero += 1;
            return;
        }
        let s = &mut self.symbols;
        let module = match l.module {
            None => CORE,
            Some(m) => match s.modules.iter().position(|k| k == m) {
                Some(i) => i as u32,
                None => {
                    s.modules.push(m.to_string());
                    (s.modules.len() - 1) as u32
                }
            },
        };
        s.entries.push(Entry {
            address: l.address,
            name_from: s.names.len() as u32,
            name_len: l.name.len() as u32,
            module,
        });
        s.names.push_str(l.name);
    }

    fn finish(self) -> Symbols {
        let mut s = self.symbols;
        s.entries.sort_by_key(|e| e.address);
        s.unavailable = match (self.text_symbols, self.zero) {
            (0, _) => Some(format!("{PATH} lists no kernel text symbols")),
            (n, z) if z == n => Some(format!(
                "{PATH} shows every address as 0 (kernel.kptr_restrict, or read without \
                 CAP_SYSLOG): run as root with sysctl kernel.kptr_restrict=0 or 1"
            )),
            _ => None,
        };
        s
    }
}

impl Symbols {
    /// The table of a kallsyms text.
    #[cfg(test)]
    pub(crate) fn parse(text: &str) -> Symbols {
        let mut table = TableBuilder::default();
        for l in lines(text) {
            table.add(&l);
        }
        table.finish()
    }

    /// The table of this machine's /proc/kallsyms, read now: parsed as it is read, a line at
    /// a time, rather than read whole first (5 MB here, grown by doubling, each page faulted
    /// in and locked by the run's mlockall).
    pub(crate) fn load() -> Symbols {
        let unreadable = |e: std::io::Error| Symbols {
            unavailable: Some(format!("cannot read {PATH}: {e}")),
            ..Symbols::default()
        };
        let file = match std::fs::File::open(PATH) {
            Ok(f) => f,
            Err(e) => return unreadable(e),
        };
        let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
        let mut table = TableBuilder::default();
        let mut buf = String::new();
        loop {
            buf.clear();
            match std::io::BufRead::read_line(&mut reader, &mut buf) {
                Ok(0) => return table.finish(),
                Ok(_) => {
                    if let Some(l) = line(&buf) {
                        table.add(&l);
                    }
                }
                Err(e) => return unreadable(e),
            }
        }
    }

    /// The process's table, read at the first call.
    pub(crate) fn shared() -> &'static Symbols {
        static SHARED: OnceLock<Symbols> = OnceLock::new();
        SHARED.get_or_init(Symbols::load)
    }

    /// Why no frame can be named (the addresses are hidden, the file unreadable), if so.
    pub(crate) fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Every address of each text symbol `names` (a static function may have several), or
    /// none when any name is missing or the addresses are hidden: a caller filtering by them
    /// then filters nothing rather than too much. A scan of the table: a few milliseconds,
    /// where reading the file again would cost 0.1-0.2 s of kernel time.
    pub(crate) fn addresses_of(&self, names: &[&str]) -> Vec<u64> {
        let mut found = Vec::new();
        let mut named = vec![false; names.len()];
        for e in &self.entries {
            let from = e.name_from as usize;
            let name = &self.names[from..from + e.name_len as usize];
            if let Some(i) = names.iter().position(|n| *n == name) {
                named[i] = true;
                found.push(e.address);
            }
        }
        match named.iter().all(|&n| n) {
            true => found,
            false => Vec::new(),
        }
    }

    /// `function+0xoff` (`function+0xoff [module]` in a module) for the code address `ip`, or
    /// `ip` in hex where no symbol names it.
    pub(crate) fn name(&self, ip: u64) -> String {
        let i = self.entries.partition_point(|e| e.address <= ip);
        let named = i
            .checked_sub(1)
            .map(|i| self.entries[i])
            .filter(|e| ip - e.address <= MAX_FUNCTION_BYTES);
        let Some(e) = named else {
            return format!("{ip:#x}");
        };
        let from = e.name_from as usize;
        let name = &self.names[from..from + e.name_len as usize];
        match self.modules.get(e.module as usize) {
            Some(m) => format!("{name}+{:#x} [{m}]", ip - e.address),
            None => format!("{name}+{:#x}", ip - e.address),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81001000 t do_one_initcall
ffffffff81001200 D some_data
ffffffff81001400 T schedule
ffffffff81001300 W weak_thing
garbage line
ffffffffc0100000 t e1000_intr\t[e1000]
ffffffffc0100400 T e1000_open\t[e1000]
";

    #[test]
    fn finds_every_address_of_the_named_functions_or_none() {
        let text = "ffffffff81100000 T hrtimer_wakeup\nffffffff81200000 t it_real_fn\nffffffff81300000 t hrtimer_wakeup\nffffffff81400000 D hrtimer_wakeup_data\n";
        let s = Symbols::parse(text);
        assert_eq!(
            s.addresses_of(&["hrtimer_wakeup"]),
            vec![0xffffffff81100000, 0xffffffff81300000]
        );
        assert_eq!(s.addresses_of(&["hrtimer_wakeup", "it_real_fn"]).len(), 3);
        // One name missing, or addresses hidden: none at all.
        assert!(s.addresses_of(&["hrtimer_wakeup", "nope"]).is_empty());
        let hidden = Symbols::parse("0000000000000000 T hrtimer_wakeup\n");
        assert!(hidden.addresses_of(&["hrtimer_wakeup"]).is_empty());
    }

    #[test]
    fn names_frames_by_the_symbol_at_or_before_them() {
        let s = Symbols::parse(TEXT);
        assert_eq!(s.unavailable(), None);
        assert_eq!(s.name(0xffff_ffff_8100_1000), "do_one_initcall+0x0");
        // Data and weak symbols are not text: the frame belongs to the text symbol before.
        assert_eq!(s.name(0xffff_ffff_8100_1210), "do_one_initcall+0x210");
        assert_eq!(s.name(0xffff_ffff_8100_1433), "schedule+0x33");
        assert_eq!(s.name(0xffff_ffff_c010_0010), "e1000_intr+0x10 [e1000]");
        assert_eq!(s.name(0xffff_ffff_c010_0400), "e1000_open+0x0 [e1000]");
        // Before the first symbol, or too far past the last: the address itself.
        assert_eq!(s.name(0xffff_ffff_80ff_ffff), "0xffffffff80ffffff");
        assert_eq!(
            s.name(0xffff_ffff_c010_0400 + MAX_FUNCTION_BYTES + 1),
            "0xffffffffc0200401"
        );
    }

    #[test]
    fn hidden_addresses_say_why_and_keep_hex() {
        let hidden = "\
0000000000000000 T _stext
0000000000000000 t do_one_initcall
0000000000000000 T schedule
";
        let s = Symbols::parse(hidden);
        let why = s.unavailable().unwrap();
        assert!(why.contains("kptr_restrict"), "{why}");
        assert_eq!(s.name(0xffff_ffff_8100_1433), "0xffffffff81001433");
        assert!(Symbols::parse("").unavailable().is_some());
    }

    #[test]
    fn lines_parse_modules_and_skip_garbage() {
        let l: Vec<Line> = lines(TEXT).collect();
        assert_eq!(l.len(), 7);
        assert_eq!(l[5].module, Some("e1000"));
        assert_eq!(l[0].module, None);
        assert!(!l[2].is_text() && l[1].is_text());
    }

    /// This machine's table, as the trace reads it: readable as root, and naming a function
    /// the kernel surely has at its own address.
    #[test]
    fn this_machines_table_names_its_own_symbols() {
        let Ok(text) = std::fs::read_to_string(PATH) else {
            return;
        };
        let s = Symbols::parse(&text);
        if s.unavailable().is_some() {
            return;
        }
        let schedule = lines(&text)
            .find(|l| l.name == "schedule" && l.is_text())
            .unwrap();
        // Another symbol may share its address (an alias): any text symbol there names it.
        let at_schedule: Vec<String> = lines(&text)
            .filter(|l| l.is_text() && l.address == schedule.address)
            .map(|l| format!("{}+0x4", l.name))
            .collect();
        let named = s.name(schedule.address + 4);
        assert!(
            at_schedule.contains(&named),
            "{named} not in {at_schedule:?}"
        );
    }
}
