//! The demo's command line (clap derive): `--listen ADDR`, `--rounds N`, `--pause SECONDS`, `--help`,
//! `--version`. The address falls back to the `LISTEN_ADDR` variable, then to [`DEFAULT_LISTEN`], and is
//! read the way the gateway reads `LISTEN_ADDR` (`:PORT`, `HOST:PORT`, `[IPv6]:PORT`, `localhost:PORT`).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use searxng_gateway::{Config, ConfigError};

/// Where the demo gateway listens unless `--listen` or `LISTEN_ADDR` says otherwise: loopback
/// only, unlike the server's `:8080`, since the demo is for the person at this machine.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The first open period of a tripped breaker in the demo's gateway: short, so a recovery happens while
/// you watch.
pub(crate) const DEFAULT_BREAKER_OPEN: Duration = Duration::from_secs(5);

/// The command line as typed.
#[derive(Debug, Parser)]
#[command(
    name = "searxng-gateway-demo",
    version,
    about = "The real searxng-gateway against simulated SearXNG and premium APIs, all on loopback, \
             narrating its decisions round after round.",
    after_help = "Environment: LISTEN_ADDR (the address when --listen is not given), LOG_LEVEL (the \
                  gateway's own log lines on stderr: error (default), warn, info, debug or trace)."
)]
struct Cli {
    /// Where the gateway listens [default: $LISTEN_ADDR, else 127.0.0.1:8080]
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    listen: Option<SocketAddr>,

    /// Stop after N rounds of the scenario [default: run until Ctrl-C]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    rounds: Option<u32>,

    /// Seconds to pause between rounds
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pause: u64,
}

/// What the demo does, resolved from the command line and the environment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DemoOptions {
    /// Where the gateway listens.
    pub(crate) listen: SocketAddr,
    /// Stop after this many rounds of the scenario; `None` loops until shut down.
    pub(crate) rounds: Option<u32>,
    /// The pause between rounds.
    pub(crate) pause: Duration,
    /// `BREAKER_OPEN_SECONDS` (and `BREAKER_MAX_OPEN_SECONDS`) of the demo's gateway; the scripted spells
    /// are timed from it. Not an option: [`DEFAULT_BREAKER_OPEN`] unless a test shortens it.
    pub(crate) breaker_open: Duration,
}

/// Why the options were not accepted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OptionsError {
    /// A wrong flag or value, or `--help` / `--version` (clap prints those and picks the exit code).
    #[error(transparent)]
    CommandLine(#[from] clap::Error),
    /// `LISTEN_ADDR` is not an address.
    #[error("{0}")]
    ListenAddr(ConfigError),
}

impl DemoOptions {
    /// Reads `args` (the first is the program name) with `listen_env` as the value of `LISTEN_ADDR`.
    pub(crate) fn parse_from<I, T>(args: I, listen_env: Option<&str>) -> Result<Self, OptionsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let cli = Cli::try_parse_from(args)?;
        let listen = match (cli.listen, listen_env.map(str::trim)) {
            (Some(flag), _) => flag,
            (None, Some(env)) if !env.is_empty() => {
                gateway_listen_addr(env).map_err(OptionsError::ListenAddr)?
            }
            (None, _) => gateway_listen_addr(DEFAULT_LISTEN).map_err(OptionsError::ListenAddr)?,
        };
        Ok(Self {
            listen,
            rounds: cli.rounds,
            pause: Duration::from_secs(cli.pause),
            breaker_open: DEFAULT_BREAKER_OPEN,
        })
    }
}

/// `--listen`'s parser: the gateway's own reading of `LISTEN_ADDR`.
fn parse_listen(raw: &str) -> Result<SocketAddr, String> {
    gateway_listen_addr(raw).map_err(|err| err.problem.to_string())
}

fn gateway_listen_addr(raw: &str) -> Result<SocketAddr, ConfigError> {
    Config::from_lookup(&|name| (name == "LISTEN_ADDR").then(|| raw.to_owned()))
        .map(|config| config.listen_addr())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use clap::CommandFactory;

    fn parse(args: &[&str], env: Option<&str>) -> Result<DemoOptions, OptionsError> {
        DemoOptions::parse_from(
            std::iter::once("searxng-gateway-demo").chain(args.iter().copied()),
            env,
        )
    }

    fn command_line_error(args: &[&str]) -> ErrorKind {
        match parse(args, None) {
            Err(OptionsError::CommandLine(err)) => err.kind(),
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn without_options_it_loops_on_the_default_address_pausing_ten_seconds() {
        let options = parse(&[], None).unwrap();

        assert_eq!(
            options,
            DemoOptions {
                listen: DEFAULT_LISTEN.parse().unwrap(),
                rounds: None,
                pause: Duration::from_secs(10),
                breaker_open: DEFAULT_BREAKER_OPEN,
            }
        );
    }

    #[test]
    fn the_address_comes_from_the_flag_then_listen_addr_then_the_default() {
        let from_env = parse(&[], Some("127.0.0.1:9000")).unwrap();
        let from_flag = parse(&["--listen", "127.0.0.1:9100"], Some("127.0.0.1:9000")).unwrap();
        let blank_env = parse(&[], Some("  ")).unwrap();
        let gateway_syntax = parse(&["--listen", "localhost:9200"], None).unwrap();

        assert_eq!(from_env.listen, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(from_flag.listen, "127.0.0.1:9100".parse().unwrap());
        assert_eq!(blank_env.listen, DEFAULT_LISTEN.parse().unwrap());
        assert_eq!(gateway_syntax.listen, "127.0.0.1:9200".parse().unwrap());
    }

    #[test]
    fn rounds_and_pause_are_whole_numbers() {
        let options = parse(&["--rounds", "2", "--pause", "0"], None).unwrap();

        assert_eq!((options.rounds, options.pause), (Some(2), Duration::ZERO));
        assert_eq!(
            command_line_error(&["--rounds", "two"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            command_line_error(&["--rounds", "0"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            command_line_error(&["--pause", "1.5"]),
            ErrorKind::ValueValidation
        );
    }

    #[test]
    fn a_wrong_option_or_address_is_refused() {
        assert_eq!(command_line_error(&["--bogus"]), ErrorKind::UnknownArgument);
        assert_eq!(
            command_line_error(&["--listen", "nowhere"]),
            ErrorKind::ValueValidation
        );
        match parse(&[], Some("nowhere")) {
            Err(OptionsError::ListenAddr(err)) => assert_eq!(err.variable, "LISTEN_ADDR"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn help_and_version_are_answered_by_clap() {
        assert_eq!(command_line_error(&["--help"]), ErrorKind::DisplayHelp);
        assert_eq!(
            command_line_error(&["--version"]),
            ErrorKind::DisplayVersion
        );
        let help = Cli::command().render_long_help().to_string();
        for expected in [
            "--listen <ADDR>",
            "--rounds <N>",
            "--pause <SECONDS>",
            "LISTEN_ADDR",
        ] {
            assert!(help.contains(expected), "{expected} missing in:\n{help}");
        }
    }
}
