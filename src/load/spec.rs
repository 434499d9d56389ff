//! Load specifications: `NAME:key=value,key=value`, e.g. `spike:cpu=0,every=100ms,len=500us`.

use crate::units::parse_duration_ns;
use std::collections::BTreeMap;

/// A parsed `NAME:key=value,...` with every key accounted for: reading a key marks it used,
/// and [`Params::finish`] rejects the keys no one read, naming them.
#[derive(Debug)]
pub struct Params {
    spec: String,
    pub name: String,
    values: BTreeMap<String, String>,
}

impl Params {
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
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
        })
    }

    fn take(&mut self, key: &str) -> Option<String> {
        self.values.remove(key)
    }

    fn bad(&self, key: &str, value: &str, accepted: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
