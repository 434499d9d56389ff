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

#[derive(Default)]
struct Counts {
    values: u64,
    strings: u64,
    /// Which cap was passed, in words.
    over: Option<String>,
}

impl Counts {
    fn add<E: de::Error>(&mut self, string: bool) -> Result<(), E> {
        self.values += 1;
        self.strings += u64::from(string);
        if self.values > RESULT_RECORD_MAX_VALUES {
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
        while seq.next_element_seed(&mut *self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.add(false)?;
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(&mut *self)?;
        }
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
        // Just under both caps: read.
        let under = format!("[{}0]", "0,".repeat(RESULT_RECORD_MAX_VALUES as usize - 2));
        check_counts(&under).unwrap();
    }
}
