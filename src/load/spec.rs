//! Load specifications: `NAME:key=value,key=value`, e.g. `spike:cpu=0,every=100ms,len=500us`,
//! or, for a load that runs a command, `NAME[key=value,...]:COMMAND ARGS...`.

use crate::units::parse_duration_ns;
use std::collections::BTreeMap;

/// A parsed `NAME:key=value,...` with every key accounted for: reading a key marks it used,
/// and [`Params::finish`] rejects the keys no one read, naming them.
#[derive(Debug)]
pub struct Params {
    spec: String,
    pub name: String,
    values: BTreeMap<String, String>,
    command: Option<String>,
}

impl Params {
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        Self::parse_values(spec, name, rest, None)
    }

    /// Parses `NAME[key=value,...]:COMMAND` or `NAME:COMMAND`: the keys in the brackets, and
    /// everything after the `:` as the command, whatever it holds. `usage` ends the message
    /// for a spec not written so.
    pub(crate) fn parse_command(spec: &str, name: &str, usage: &str) -> Result<Self, String> {
        let rest = spec
            .strip_prefix(name)
            .ok_or_else(|| format!("load '{spec}': not an {name} load; {usage}"))?;
        let (options, command) = if let Some(r) = rest.strip_prefix('[') {
            let close = r.find("]:").ok_or_else(|| {
                format!("load '{spec}': the options bracket is not closed by ']:'; {usage}")
            })?;
            (&r[..close], &r[close + 2..])
        } else if let Some(c) = rest.strip_prefix(':') {
            ("", c)
        } else {
            return Err(format!("load '{spec}': {usage}"));
        };
        if command.trim().is_empty() {
            return Err(format!("load '{spec}': no command after the ':'; {usage}"));
        }
        Self::parse_values(spec, name, options, Some(command.to_string()))
    }

    fn parse_values(
        spec: &str,
        name: &str,
        rest: &str,
        command: Option<String>,
    ) -> Result<Self, String> {
        let mut values = BTreeMap::new();
        for pair in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("load '{spec}': '{pair}' is not key=value"))?;
            if values
                .insert(k.trim().to_string(), v.trim().to_string())
                .is_some()
            {
                return Err(format!("load '{spec}': key '{}' is given twice", k.trim()));
            }
        }
        Ok(Params {
            spec: spec.to_string(),
            name: name.trim().to_string(),
            values,
            command,
        })
    }

    /// The command of a `NAME[...]:COMMAND` spec ([`Params::parse_command`]).
    pub fn command(&self) -> Option<&str> {
        self.command.as_deref()
    }

    fn take(&mut self, key: &str) -> Option<String> {
        self.values.remove(key)
    }

    /// The message for a value outside what `key` accepts.
    pub fn bad(&self, key: &str, value: &str, accepted: &str) -> String {
        format!(
            "load '{}': {key}={value} is not valid; {key} takes {accepted}",
            self.spec
        )
    }

    /// A duration with a unit, or `default`.
    pub fn duration_ns(&mut self, key: &str, default: Option<u64>) -> Result<Option<u64>, String> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => parse_duration_ns(&v)
                .map(Some)
                .map_err(|e| format!("load '{}': {key}: {e}", self.spec)),
        }
    }

    /// An integer within `range`, or `default`.
    pub fn int(
        &mut self,
        key: &str,
        range: std::ops::RangeInclusive<i64>,
        default: Option<i64>,
    ) -> Result<Option<i64>, String> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => match v.parse::<i64>() {
                Ok(n) if range.contains(&n) => Ok(Some(n)),
                _ => Err(self.bad(
                    key,
                    &v,
                    &format!("an integer from {} to {}", range.start(), range.end()),
                )),
            },
        }
    }

    /// A text value, or `default`.
    pub fn text(&mut self, key: &str, default: Option<&str>) -> Option<String> {
        self.take(key).or_else(|| default.map(str::to_string))
    }

    /// One of `choices`, or `default`.
    pub(crate) fn choice(
        &mut self,
        key: &str,
        choices: &[&str],
        default: &str,
    ) -> Result<String, String> {
        let v = self.take(key).unwrap_or_else(|| default.to_string());
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.bad(key, &v, &format!("one of {}", choices.join(", "))))
        }
    }

    /// `true` or `false`, or `default`.
    pub(crate) fn boolean(&mut self, key: &str, default: bool) -> Result<bool, String> {
        match self.take(key).as_deref() {
            None => Ok(default),
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(v) => Err(self.bad(key, v, "true or false")),
        }
    }

    /// A size in bytes within `range`: a whole number with an optional binary unit, `K`, `M`,
    /// `G` or `T` (KiB, MiB, GiB, TiB; `KiB`... and `KB`... are read the same), or `default`.
    pub fn bytes(
        &mut self,
        key: &str,
        range: std::ops::RangeInclusive<u64>,
        default: u64,
    ) -> Result<u64, String> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        let accepted = format!(
            "a size from {} to {} bytes: a whole number with an optional unit K, M, G or T (powers of 1024), e.g. 4K, 64M, 1G",
            range.start(),
            range.end()
        );
        match parse_bytes(&v) {
            Some(n) if range.contains(&n) => Ok(n),
            _ => Err(self.bad(key, &v, &accepted)),
        }
    }

    /// The load text as given, for messages.
    pub(crate) fn spec_text(&self) -> &str {
        &self.spec
    }

    /// Rejects any key that was not read.
    pub fn finish(self, known: &[&str]) -> Result<(), String> {
        match self.values.keys().next() {
            None => Ok(()),
            Some(k) => Err(format!(
                "load '{}': unknown parameter '{k}'; {} takes {}",
                self.spec,
                self.name,
                known.join(", ")
            )),
        }
    }
}

/// Parses `64M`, `4K`, `1G`, `512`, `2MiB`: bytes, with binary units.
pub(crate) fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: u64 = number.parse().ok()?;
    let unit = unit.to_ascii_uppercase();
    let scale: u64 = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_bytes("512"), Some(512));
        assert_eq!(parse_bytes("4K"), Some(4096));
        assert_eq!(parse_bytes("64M"), Some(64 << 20));
        assert_eq!(parse_bytes("2MiB"), Some(2 << 20));
        assert_eq!(parse_bytes("1g"), Some(1 << 30));
        assert_eq!(parse_bytes("1.5M"), None);
        assert_eq!(parse_bytes("M"), None);
        assert_eq!(parse_bytes("3X"), None);
        let mut p = Params::parse("io:size=12Q").unwrap();
        assert!(
            p.bytes("size", 1..=100, 5)
                .unwrap_err()
                .contains("size=12Q")
        );
    }

    #[test]
    fn parses_and_accounts_for_every_key() {
        let mut p = Params::parse("spike:cpu=1,len=2ms").unwrap();
        assert_eq!(p.name, "spike");
        assert_eq!(p.int("cpu", 0..=4096, None).unwrap(), Some(1));
        assert_eq!(p.duration_ns("len", None).unwrap(), Some(2_000_000));
        assert_eq!(p.duration_ns("every", Some(5)).unwrap(), Some(5));
        p.finish(&["cpu", "len", "every"]).unwrap();
    }

    #[test]
    fn splits_options_and_command() {
        let usage = "write x:CMD";
        let p = Params::parse_command("exec:stress-ng --cpu 1", "exec", usage).unwrap();
        assert_eq!(p.command(), Some("stress-ng --cpu 1"));
        let mut p =
            Params::parse_command("exec[restart=true,workers=2]:sh -c 'a,b=c'", "exec", usage)
                .unwrap();
        assert_eq!(p.command(), Some("sh -c 'a,b=c'"));
        assert!(p.boolean("restart", false).unwrap());
        let err = |t: &str| Params::parse_command(t, "exec", usage).unwrap_err();
        assert!(err("exec[restart=true:x").contains("not closed"));
        assert!(err("exec:").contains("no command"));
        assert!(err("execute:x").ends_with(usage));
    }

    #[test]
    fn names_the_bad_key() {
        let p = Params::parse("spike:cpu=0,colour=red").unwrap();
        assert!(
            p.finish(&["cpu"])
                .unwrap_err()
                .contains("unknown parameter 'colour'")
        );
        let mut p = Params::parse("spike:prio=120").unwrap();
        assert!(
            p.int("prio", 1..=99, None)
                .unwrap_err()
                .contains("prio=120")
        );
        assert!(
            Params::parse("spike:cpu")
                .unwrap_err()
                .contains("not key=value")
        );
        assert!(
            Params::parse("spike:cpu=1,cpu=2")
                .unwrap_err()
                .contains("twice")
        );
    }
}
