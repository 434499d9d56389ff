//! Sweeps: one run per level of one load, e.g. `--load 'hackbench:groups={}' --levels 1,2,4`.
//! The rules of the levels and of the swept load are here; the driver (one run per level) is
//! `commands/sweep.rs`, the summary it writes `results/sweep.rs`.

use crate::error::{Failure, Result};

/// Where `{}` goes in the swept load.
pub(crate) const PLACEHOLDER: &str = "{}";

/// The levels of `--levels` (comma-separated), each usable in a directory name, none twice.
pub fn levels(text: &str) -> Result<Vec<String>> {
    let levels: Vec<String> = text.split(',').map(|l| l.trim().to_string()).collect();
    for l in &levels {
        if l.is_empty()
            || !l
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(Failure::usage(format!(
                "--levels {text}: level '{l}' is empty or has characters other than letters, digits, '.', '_', '-'; give e.g. --levels 1,2,4,8"
            )));
        }
        if levels.iter().filter(|m| *m == l).count() > 1 {
            return Err(Failure::usage(format!(
                "--levels {text}: level '{l}' is given twice; each level is one run"
            )));
        }
    }
    Ok(levels)
}

/// The index of the one load among `loads` that holds [`PLACEHOLDER`] (a sweep has no
/// scenario: `sweep` does not take `--scenario`).
pub(crate) fn swept_load(loads: &[String]) -> Result<usize> {
    let swept: Vec<usize> = (0..loads.len())
        .filter(|&i| loads[i].contains(PLACEHOLDER))
        .collect();
    if swept.len() != 1 {
        return Err(Failure::usage(format!(
            "sweep: exactly one --load must hold {PLACEHOLDER} where each level goes (e.g. --load 'hackbench:groups={{}}'); {} do",
            swept.len()
        )));
    }
    Ok(swept[0])
}

/// The swept load of one level: the template with the level in place of [`PLACEHOLDER`].
pub(crate) fn level_spec(template: &str, level: &str) -> String {
    template.replace(PLACEHOLDER, level)
}
