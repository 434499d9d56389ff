//! The kernel's build configuration, from /proc/config.gz or /boot/config-RELEASE.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use super::root;

/// `CONFIG_*` options of the running kernel. Options that are "not set" are absent.
#[derive(Debug, Clone, Default)]
pub(crate) struct KernelConfig {
    /// Where the configuration was read from, for evidence (`/proc/config.gz`).
    pub source: String,
    options: HashMap<String, String>,
}

impl KernelConfig {
    /// Loads the configuration of the kernel running under `root`: /proc/config.gz (needs
    /// CONFIG_IKCONFIG_PROC) first, then the distributions' /boot/config-RELEASE.
    pub(crate) fn load(root: &Path) -> Result<Self, String> {
        let gz = root::path(root, "proc/config.gz");
        let gz_error = match std::fs::File::open(&gz) {
            Ok(file) => {
                let mut text = String::new();
                match flate2::read::GzDecoder::new(file).read_to_string(&mut text) {
                    Ok(_) => return Ok(Self::parse("/proc/config.gz", &text)),
                    Err(e) => format!("/proc/config.gz is unreadable ({e})"),
                }
            }
            Err(_) => "no /proc/config.gz".to_string(),
        };
        let release = root::read_trim(root, "proc/sys/kernel/osrelease")?;
        let boot = format!("boot/config-{release}");
        match root::read(root, &boot) {
            Ok(text) => Ok(Self::parse(&format!("/{boot}"), &text)),
            Err(_) => Err(format!(
                "kernel configuration not found: {gz_error}, no /{boot}"
            )),
        }
    }

    /// Parses the `CONFIG_X=value` lines of a kernel .config.
    pub(crate) fn parse(source: &str, text: &str) -> Self {
        let options = text
            .lines()
            .filter_map(|line| {
                let (name, value) = line.trim().split_once('=')?;
                let name = name.strip_prefix("CONFIG_")?;
                Some((name.to_string(), value.trim_matches('"').to_string()))
            })
            .collect();
        KernelConfig {
            source: source.to_string(),
            options,
        }
    }

    /// The value of `CONFIG_<name>` (name without the prefix), if set.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// Whether `CONFIG_<name>` is built in or a module.
    pub(crate) fn enabled(&self, name: &str) -> bool {
        matches!(self.get(name), Some("y") | Some("m"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_set_and_unset_options() {
        let c = KernelConfig::parse(
            "x",
            "CONFIG_HZ=250\n# CONFIG_KASAN is not set\nCONFIG_A=\"s\"\n",
        );
        assert_eq!(c.get("HZ"), Some("250"));
        assert_eq!(c.get("KASAN"), None);
        assert_eq!(c.get("A"), Some("s"));
        assert!(!c.enabled("HZ"));
    }
}
