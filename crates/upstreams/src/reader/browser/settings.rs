//! The local browser's settings, read from the environment here (their owner): `BROWSER`,
//! `BROWSER_PATH`, `BROWSER_TABS`, `BROWSER_TIMEOUT_SECONDS`, `BROWSER_MEMORY_MB`,
//! `BROWSER_HOSTS`. Where the binary is looked for: `BROWSER_PATH`, else `chromium`,
//! `chromium-browser`, `google-chrome` on `PATH`, in that order.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::super::address::HostList;
use gateway_core::env::{ConfigError, Env, Problem};

/// The names a Chromium binary goes by on `PATH`, in the order they are looked for.
const NAMES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// `BROWSER`: when pages are rendered locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrowserMode {
    /// Never.
    Off,
    /// When the direct read is a script shell or has no readable text, and for `BROWSER_HOSTS`.
    Auto,
    /// Every page, without a direct read first.
    Always,
}

impl BrowserMode {
    const NAMES: &'static [&'static str] = &["off", "auto", "always"];

    /// The setting's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Auto => "auto",
            Self::Always => "always",
        }
    }
}

/// Why the mode in force is what it is: the start-up log's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeOrigin {
    /// The operator set `BROWSER`.
    Set,
    /// `BROWSER=auto` (or unset) and a Chromium was found.
    Found,
    /// `BROWSER=auto` (or unset) and no Chromium was found: off.
    NotFound,
}

/// The local browser's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct BrowserSettings {
    /// The mode in force (`auto` without a binary is `off`).
    pub mode: BrowserMode,
    /// Why.
    pub origin: ModeOrigin,
    /// The binary (`None` when off).
    pub program: Option<PathBuf>,
    /// `BROWSER_TABS`.
    pub tabs: usize,
    /// `BROWSER_TIMEOUT_SECONDS`.
    pub timeout: Duration,
    /// `BROWSER_MEMORY_MB`, in bytes.
    pub memory_bytes: u64,
    /// `BROWSER_HOSTS`.
    pub(crate) hosts: HostList,
}

impl BrowserSettings {
    /// Reads the `BROWSER_*` variables; looks for the binary when the mode needs one.
    pub fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mode = env.required("BROWSER")?;
        let asked = match mode.text.to_ascii_lowercase().as_str() {
            "off" | "false" | "0" => BrowserMode::Off,
            "auto" => BrowserMode::Auto,
            "always" => BrowserMode::Always,
            _ => return Err(mode.error(Problem::NotOneOf(BrowserMode::NAMES))),
        };
        let given = env.value("BROWSER_PATH");
        let program = match &given {
            Some(raw) if runnable(Path::new(&raw.text)) => Some(PathBuf::from(&raw.text)),
            Some(raw) => return Err(raw.error(Problem::NoBrowser)),
            None => on_path(std::env::var_os("PATH").as_deref()),
        };
        let tabs = env.integer("BROWSER_TABS", 1usize, 64)?;
        let timeout = env.seconds("BROWSER_TIMEOUT_SECONDS")?;
        let memory_mb = env.integer("BROWSER_MEMORY_MB", 128u64, 1024 * 1024)?;
        let hosts = env
            .value("BROWSER_HOSTS")
            .map(|raw| HostList::new(raw.text.split(',')))
            .unwrap_or_default();
        let (mode, origin, program) = match (asked, program) {
            (BrowserMode::Off, _) => (BrowserMode::Off, ModeOrigin::Set, None),
            (BrowserMode::Always, None) => return Err(mode.error(Problem::NoBrowser)),
            (BrowserMode::Always, Some(program)) => {
                (BrowserMode::Always, ModeOrigin::Set, Some(program))
            }
            (BrowserMode::Auto, Some(program)) => {
                (BrowserMode::Auto, ModeOrigin::Found, Some(program))
            }
            (BrowserMode::Auto, None) => (BrowserMode::Off, ModeOrigin::NotFound, None),
        };
        Ok(Self {
            mode,
            origin,
            program,
            tabs,
            timeout,
            memory_bytes: memory_mb * 1024 * 1024,
            hosts,
        })
    }

    /// Whether `host` is one of `BROWSER_HOSTS`.
    pub fn always_renders(&self, host: &str) -> bool {
        self.hosts.matches(host)
    }
}

/// A regular file the gateway may execute.
fn runnable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The first of [`NAMES`] found in `path` (a `PATH` value).
fn on_path(path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = std::env::split_paths(path?).collect();
    NAMES.iter().find_map(|name| {
        dirs.iter()
            .map(|dir| dir.join(name))
            .find(|candidate| runnable(candidate))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<BrowserSettings, ConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        BrowserSettings::read(&Env::new(&lookup))
    }

    #[test]
    fn a_bad_value_is_refused_by_its_variable_name() {
        for (name, value) in [
            ("BROWSER", "sometimes"),
            ("BROWSER_PATH", "/nonexistent/chromium"),
            ("BROWSER_TABS", "0"),
            ("BROWSER_TIMEOUT_SECONDS", "0"),
            ("BROWSER_MEMORY_MB", "64"),
        ] {
            assert_eq!(read(&[(name, value)]).unwrap_err().variable, name);
        }
    }

    #[test]
    fn off_needs_no_binary_and_always_needs_one() {
        let off = read(&[("BROWSER", "off"), ("BROWSER_PATH", "/bin/sh")]).unwrap();
        assert_eq!((off.mode, off.program), (BrowserMode::Off, None));
        let always = read(&[("BROWSER", "always"), ("BROWSER_PATH", "/bin/sh")]).unwrap();
        assert_eq!(always.mode, BrowserMode::Always);
        assert_eq!(always.origin, ModeOrigin::Set);
    }

    #[test]
    fn auto_is_on_with_a_binary_found_and_the_hosts_match_domains() {
        let auto = read(&[
            ("BROWSER_PATH", "/bin/sh"),
            ("BROWSER_HOSTS", ".app.example, x.org"),
        ])
        .unwrap();
        assert_eq!(
            (auto.mode, auto.origin),
            (BrowserMode::Auto, ModeOrigin::Found)
        );
        assert!(auto.always_renders("www.app.example"));
        assert!(auto.always_renders("x.org"));
        assert!(!auto.always_renders("y.org"));
        assert_eq!(auto.tabs, 2);
        assert_eq!(auto.timeout, Duration::from_secs(15));
    }

    #[test]
    fn the_binary_is_looked_for_by_its_names_on_path() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(on_path(Some(dir.path().as_os_str())), None);
        let program = dir.path().join("chromium-browser");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(on_path(Some(dir.path().as_os_str())), Some(program));
    }
}
