//! A bound on what parsing a result's JSON record (run.json, sweep.json) may cost, checked
//! before it is parsed into its types (issue 39 F3). The size cap alone does not bound memory:
//! a run.json of 200 MB holding 40 million one-letter warnings took 4.85 GB to read, each
//! string costing a heap allocation and its header (about 24 times its bytes). This pass walks
//! the text once, in linear time, storing nothing, and counts its values; a record with more
//! values, or more strings, than any run writes is refused before a byte of it is kept.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The most JSON values (numbers, strings, booleans, nulls, arrays, objects) read in one
/// record: the largest run (10 000 scenario phases on 64 CPUs, about 250 MiB) has about 8.4
/// million (13 a CPU a phase); each value costs at most a few dozen bytes parsed.
pub(crate) const RESULT_RECORD_MAX_VALUES: u64 = 1 << 24;

/// The most strings (values, not object keys) read in one record: a run's strings are its
/// names, commands, warnings and notes, thousands at most; each costs a heap allocation.
pub(crate) const RESULT_RECORD_MAX_STRINGS: u64 = 1 << 20;

/// The most JSON values under run.json's `system` (the system snapshot, docs/doctor.md): it is
/// kept as a JSON tree, about 64 bytes a value, where the typed fields cost 8 (issue 39 L-b: 16
/// million numbers there took 1.0 GB). A snapshot has a few dozen checks of 7 values and two
/// CPU lists: about 500 values and 2 a CPU, so 65 536 is room for 32 768 CPUs (4 MB parsed).
pub(crate) const RESULT_RECORD_MAX_SYSTEM_VALUES: u64 = 1 << 16;

/// The top-level key whose values [`RESULT_RECORD_MAX_SYSTEM_VALUES`] bounds.
const SYSTEM_KEY: &str = "system";

/// Counts the values of the JSON `text`, refusing it (with the reason) as soon as a cap is
/// passed. A text that is not JSON passes: the typed parse that follows says what is wrong.
pub(crate) fn check_counts(text: &str) -> Result<(), String> {
    let mut counts = Counts::default();
    let mut de = serde_json::Deserializer::from_str(text);
    match (&mut counts).deserialize(&mut de) {
        Err(e) if counts.over.is_some() => Err(counts.over.unwrap_or_else(|| e.to_string())),
        _ => Ok(()),
    }
}

/// The number of JSON values of `bytes` (as [`check_counts`] counts them, with no cap): what
/// the writer of run.json measures its record with (`format::record_budget`). A text that is
/// not JSON counts what was read before the fault.
pub(crate) fn count_values(bytes: &[u8]) -> u64 {
    let mut counts = Counts {
        uncapped: true,
        ..Counts::default()
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let _ = (&mut counts).deserialize(&mut de);
    counts.values
}

#[derive(Default)]
struct Counts {
    /// Count only, refusing nothing ([`count_values`]).
    uncapped: bool,
    values: u64,
    strings: u64,
    /// Values under the top-level `system` key, and whether the walk is under it now.
    system: u64,
    in_system: bool,
    /// Objects and arrays the walk is inside.
    depth: u32,
    /// Which cap was passed, in words.
    over: Option<String>,
}

impl Counts {
    fn add<E: de::Error>(&mut self, string: bool) -> Result<(), E> {
        self.values += 1;
        self.strings += u64::from(string);
        self.system += u64::from(self.in_system);
        if self.uncapped {
            return Ok(());
        }
        if self.system > RESULT_RECORD_MAX_SYSTEM_VALUES {
            self.over = Some(format!(
                "its `{SYSTEM_KEY}` holds more than {} JSON values, more than any system snapshot (about 500, and 2 a CPU); reading it would take memory without bound",
                crate::units::group_digits(RESULT_RECORD_MAX_SYSTEM_VALUES)
            ));
        } else if self.values > RESULT_RECORD_MAX_VALUES {
            self.over = Some(format!(
                "it holds more than {} JSON values, more than any run writes (the largest, 10 000 phases on 64 CPUs, about 8.4 million); reading it would take memory without bound",
                crate::units::group_digits(RESULT_RECORD_MAX_VALUES)
            ));
        } else if self.strings > RESULT_RECORD_MAX_STRINGS {
            self.over = Some(format!(
                "it holds more than {} strings, more than any run writes (its names, commands, warnings and notes: thousands at most); reading it would take memory without bound",
                crate::units::group_digits(RESULT_RECORD_MAX_STRINGS)
            ));
        }
        match &self.over {
            Some(why) => Err(E::custom(why)),
            None => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for &mut Counts {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut Counts {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.add(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.add(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.add(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.add(false)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.add(false)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.add(true)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.add(false)?;
        self.depth += 1;
        while seq.next_element_seed(&mut *self)?.is_some() {}
        self.depth -= 1;
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.add(false)?;
        self.depth += 1;
        if self.depth == 1 {
            // The record's own keys: `system` is counted apart (a handful of keys read).
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                self.in_system = key == SYSTEM_KEY;
                map.next_value_seed(&mut *self)?;
                self.in_system = false;
            }
        } else {
            while map.next_key::<IgnoredAny>()?.is_some() {
                map.next_value_seed(&mut *self)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_of_too_many_values_or_strings_is_refused() {
        check_counts(r#"{"a": [1, "x", {"b": null}], "c": true}"#).unwrap();
        check_counts("not json").unwrap();
        let strings = format!(
            "[{}\"a\"]",
            "\"a\",".repeat(RESULT_RECORD_MAX_STRINGS as usize)
        );
        let e = check_counts(&strings).unwrap_err();
        assert!(e.contains("more than 1 048 576 strings"), "{e}");
        let numbers = format!("[{}0]", "0,".repeat(RESULT_RECORD_MAX_VALUES as usize));
        let e = check_counts(&numbers).unwrap_err();
        assert!(e.contains("more than 16 777 216 JSON values"), "{e}");
        // `system` (kept as a JSON tree) has a cap of its own; elsewhere as many pass.
        let system = |n: u64| {
            format!(
                r#"{{"format": 1, "system": {{"checks": [{}0]}}, "threads": [{}0]}}"#,
                "0,".repeat(n as usize - 3),
                "0,".repeat(100_000)
            )
        };
        check_counts(&system(RESULT_RECORD_MAX_SYSTEM_VALUES)).unwrap();
        let e = check_counts(&system(RESULT_RECORD_MAX_SYSTEM_VALUES + 1)).unwrap_err();
        assert!(
            e.contains("its `system` holds more than 65 536 JSON values"),
            "{e}"
        );
        assert_eq!(
            count_values(br#"{"a": [1, "x", {"b": null}], "c": true}"#),
            7
        );
        assert_eq!(
            count_values(numbers.as_bytes()),
            RESULT_RECORD_MAX_VALUES + 2
        );
        // Just under both caps: read.
        let under = format!("[{}0]", "0,".repeat(RESULT_RECORD_MAX_VALUES as usize - 2));
        check_counts(&under).unwrap();
    }
}
