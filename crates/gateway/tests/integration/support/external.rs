//! The real programs some tests start — SearXNG, `redis-server`, Prometheus and promtool, the Python
//! client libraries, Chromium — and what a test does when one is not installed.
//!
//! Two tiers: on a machine with only Rust, `cargo test` runs every other test and a test that needs a
//! missing program returns at its first line, after one line on stderr per missing program naming it
//! and how to get it (printed past the test harness's capture, so it shows in a passing run).
//! `scripts/test.sh` (the README's test command, and CI) installs every program and sets
//! `GATEWAY_EXTERNAL_TESTS=required`, under which a missing program fails the test instead: nothing
//! is skipped there.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// A program a test needs besides Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Program {
    /// SearXNG in its virtualenv (`SEARXNG_VENV`, default `/opt/searxng-gateway/venv`).
    Searxng,
    /// `redis-server` and `redis-cli` on `PATH` (Debian's redis-server, with redis-tools).
    RedisServer,
    /// `redis-sentinel` on `PATH` (Debian's redis-sentinel).
    RedisSentinel,
    /// `prometheus` on `PATH`.
    Prometheus,
    /// `promtool` on `PATH`.
    Promtool,
    /// The client libraries' virtualenv (`CLIENTS_VENV`, default `/opt/searxng-gateway/clients-venv`).
    ClientLibraries,
    /// `chromium` and `chromedriver` on `PATH` (Debian's chromium and chromium-driver).
    Chromium,
    /// `chromium` on `PATH` (Debian's chromium): the gateway's local browser.
    HeadlessChromium,
}

/// Where SearXNG's virtualenv is.
pub(crate) fn searxng_venv() -> PathBuf {
    venv("SEARXNG_VENV", "/opt/searxng-gateway/venv")
}

/// Where the client libraries' virtualenv is.
pub(crate) fn clients_venv() -> PathBuf {
    venv("CLIENTS_VENV", "/opt/searxng-gateway/clients-venv")
}

fn venv(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable)
        .filter(|value| !value.is_empty())
        .map_or_else(|| PathBuf::from(default), PathBuf::from)
}

impl Program {
    fn name(self) -> &'static str {
        match self {
            Self::Searxng => "SearXNG",
            Self::RedisServer => "redis-server",
            Self::RedisSentinel => "redis-sentinel",
            Self::Prometheus => "prometheus",
            Self::Promtool => "promtool",
            Self::ClientLibraries => "the Python client libraries",
            Self::Chromium => "Chromium and chromedriver",
            Self::HeadlessChromium => "Chromium",
        }
    }

    fn how_to_install(self) -> &'static str {
        match self {
            Self::Searxng => "bash .ci/install-searxng.sh",
            Self::RedisServer => "apt-get install redis-server",
            Self::RedisSentinel => "apt-get install redis-sentinel",
            Self::Prometheus | Self::Promtool => "apt-get install prometheus",
            Self::ClientLibraries => "bash .ci/install-clients.sh",
            Self::Chromium => "bash scripts/install-chromium.sh",
            Self::HeadlessChromium => "apt-get install chromium",
        }
    }

    fn is_installed(self) -> bool {
        match self {
            Self::Searxng => searxng_venv().join("bin").join("granian").is_file(),
            Self::RedisServer => on_path("redis-server") && on_path("redis-cli"),
            Self::RedisSentinel => on_path("redis-sentinel"),
            Self::Prometheus => on_path("prometheus"),
            Self::Promtool => on_path("promtool"),
            Self::ClientLibraries => clients_venv().join("bin").join("python").is_file(),
            Self::Chromium => on_path("chromium") && on_path("chromedriver"),
            Self::HeadlessChromium => on_path("chromium"),
        }
    }

    fn announced(self) -> &'static Once {
        static ANNOUNCED: [Once; 8] = [const { Once::new() }; 8];
        &ANNOUNCED[self as usize]
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| is_executable(&dir.join(program)))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether the calling test must stop here because `program` is not installed: `false` when it is;
/// under `GATEWAY_EXTERNAL_TESTS=required` a missing program panics instead.
pub(crate) fn missing(program: Program) -> bool {
    if program.is_installed() {
        return false;
    }
    let required = std::env::var("GATEWAY_EXTERNAL_TESTS").is_ok_and(|v| v == "required");
    assert!(
        !required,
        "{} is not installed ({}); scripts/test.sh installs it",
        program.name(),
        program.how_to_install()
    );
    program.announced().call_once(|| {
        // Straight to the process's stderr: the harness captures only print!/eprint!.
        let _ = writeln!(
            std::io::stderr(),
            "note: the tests that need {} did not run (not installed: {}); `scripts/test.sh` installs \
             everything and runs them all",
            program.name(),
            program.how_to_install()
        );
    });
    true
}

/// Returns from the calling test when a program it needs is missing (see [`missing`]).
macro_rules! needs {
    ($($program:ident),+ $(,)?) => {
        if false $(|| $crate::support::external::missing($crate::support::external::Program::$program))+ {
            return;
        }
    };
}
pub(crate) use needs;
