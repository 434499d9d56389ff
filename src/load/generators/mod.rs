//! The registry of load generators: one file per generator, each implementing
//! [`Generator`](super::generator::Generator), and one row per generator in [`GENERATORS`],
//! the only place that names them. A new generator is a new file here plus its `mod` line and
//! its row below.

use super::generator::GeneratorInfo;

mod cpu;
mod exec;
mod fork;
mod hackbench;
mod io;
mod memory;
mod net;
mod proc;
mod stream;

/// Every built-in generator, in the order the docs and error messages list them.
pub static GENERATORS: &[&GeneratorInfo] = &[
    &hackbench::INFO,
    &cpu::INFO,
    &memory::INFO,
    &io::INFO,
    &fork::INFO,
    &proc::INFO,
    &net::INFO,
    &exec::INFO,
    &stream::INFO,
];

/// The generator called `name`.
pub fn find(name: &str) -> Option<&'static GeneratorInfo> {
    GENERATORS.iter().copied().find(|g| g.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::LoadSpec;
    use crate::load::generator::Syntax;

    /// `NAME:key=value` or `NAME[key=value]:true`, as the generator's syntax wants.
    fn spec(name: &str, key_values: &str) -> String {
        match find(name).unwrap().syntax {
            Syntax::Parameters => format!("{name}:{key_values}"),
            Syntax::Command { .. } => format!("{name}[{key_values}]:true"),
        }
    }

    #[test]
    fn names_are_unique_and_every_default_parses() {
        for (i, g) in GENERATORS.iter().enumerate() {
            assert!(
                GENERATORS[..i].iter().all(|o| o.name != g.name),
                "{} twice",
                g.name
            );
            for p in g.parameters.iter().filter(|p| !p.default.is_empty()) {
                let text = spec(g.name, &format!("{}={}", p.name, p.default));
                match LoadSpec::parse(&text) {
                    Ok(LoadSpec::Generator(s)) => assert_eq!(s.name(), g.name),
                    other => panic!("{text}: {other:?}"),
                }
            }
            let e = LoadSpec::parse(&spec(g.name, "colour=red")).unwrap_err();
            for p in g.parameters {
                assert!(e.contains(p.name), "{}: {e}", g.name);
            }
        }
    }

    #[test]
    fn docs_describe_every_generator_and_parameter() {
        let docs = include_str!("../../../docs/loads.md");
        for g in GENERATORS {
            let section = docs
                .split("\n### ")
                .find(|s| s.starts_with(g.name))
                .unwrap_or_else(|| panic!("docs/loads.md has no '### {}' section", g.name));
            for p in g.parameters {
                assert!(
                    section.contains(&format!("| `{}` |", p.name)),
                    "docs/loads.md '### {}' has no row for `{}`",
                    g.name,
                    p.name
                );
            }
        }
    }
}
