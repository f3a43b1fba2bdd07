//! The direct reader's settings, read from the environment here (their owner): `FETCH_TIMEOUT_SECONDS`,
//! `FETCH_MAX_BYTES`, `FETCH_USER_AGENT`, and where reads may go — `FETCH_ALLOW_PRIVATE`,
//! `FETCH_ALLOW_HOSTS`, `FETCH_DENY_HOSTS` ([`super::address`]).

use ipnet::IpNet;

use super::address::{AddressPolicy, HostList, PrivateAccess};
use super::{ReaderSettings, SandboxSettings};
use gateway_core::env::{ConfigError, Env, Problem};

/// The largest `FETCH_MAX_BYTES`: what the shared body budget lets one body hold.
const MAX_BODY: usize = 16 * 1024 * 1024;

impl ReaderSettings {
    /// Reads the `FETCH_*` variables. The gateway's own listen address is added to the policy when
    /// the listener is bound.
    pub fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let timeout = env.seconds("FETCH_TIMEOUT_SECONDS")?;
        let max_bytes = env.integer("FETCH_MAX_BYTES", 1024usize, MAX_BODY)?;
        let user_agent = env.required("FETCH_USER_AGENT")?;
        if reqwest::header::HeaderValue::from_str(&user_agent.text).is_err() {
            return Err(user_agent.error(Problem::ForbiddenCharacters(
                "characters a header value cannot carry",
            )));
        }
        let private = env.required("FETCH_ALLOW_PRIVATE")?;
        let private = match private.text.to_ascii_lowercase().as_str() {
            "false" | "no" | "0" => PrivateAccess::Refused,
            "true" | "yes" | "1" => PrivateAccess::Allowed,
            _ => {
                let mut nets = Vec::new();
                for entry in private.text.split(',').map(str::trim) {
                    let net = entry
                        .parse::<IpNet>()
                        .or_else(|_| entry.parse::<std::net::IpAddr>().map(IpNet::from))
                        .map_err(|_| {
                            private.error(Problem::NotOneOf(&[
                                "false",
                                "true",
                                "a comma list of CIDRs (10.0.0.0/8, 127.0.0.1/32, …)",
                            ]))
                        })?;
                    nets.push(net);
                }
                PrivateAccess::Networks(nets)
            }
        };
        let hosts = |name| {
            env.value(name)
                .map(|raw| HostList::new(raw.text.split(',')))
                .unwrap_or_default()
        };
        Ok(Self {
            timeout,
            max_bytes,
            sandbox: sandbox(env)?,
            browser: super::BrowserSettings::read(env)?,
            user_agent: user_agent.text,
            policy: AddressPolicy {
                private,
                allow_hosts: hosts("FETCH_ALLOW_HOSTS"),
                deny_hosts: hosts("FETCH_DENY_HOSTS"),
                own: Vec::new(),
            },
        })
    }
}

/// `PARSE_WORKERS`, `PARSE_MEMORY_MB`, `PARSE_WORKER_PROGRAM`.
fn sandbox(env: &Env<'_>) -> Result<SandboxSettings, ConfigError> {
    let workers = match env.integer("PARSE_WORKERS", 0usize, 256)? {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        n => n,
    };
    let memory_mb = env.integer("PARSE_MEMORY_MB", 256u64, 1024 * 1024)?;
    let program = match env.value("PARSE_WORKER_PROGRAM") {
        Some(raw) => {
            use std::os::unix::fs::PermissionsExt;
            let path = std::path::PathBuf::from(&raw.text);
            let runnable = std::fs::metadata(&path)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
            if !runnable {
                return Err(raw.error(Problem::NotAProgram));
            }
            Some(path)
        }
        None => None,
    };
    Ok(SandboxSettings {
        workers,
        memory_bytes: memory_mb * 1024 * 1024,
        program,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_worker_program_that_is_not_runnable_is_refused_by_name() {
        let err = read(&[("PARSE_WORKER_PROGRAM", "/nonexistent/gateway")]).unwrap_err();
        assert!(err.to_string().contains("PARSE_WORKER_PROGRAM"), "{err}");
        let ok = read(&[("PARSE_WORKER_PROGRAM", "/bin/sh")]).unwrap();
        assert_eq!(
            ok.sandbox.program.as_deref(),
            Some(std::path::Path::new("/bin/sh"))
        );
        let err = read(&[("PARSE_MEMORY_MB", "64")]).unwrap_err();
        assert!(err.to_string().contains("PARSE_MEMORY_MB"), "{err}");
    }

    fn read(vars: &[(&str, &str)]) -> Result<ReaderSettings, ConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        ReaderSettings::read(&Env::new(&lookup))
    }

    #[test]
    fn the_defaults_read_public_addresses_only_for_ten_seconds_up_to_eight_mib() {
        let s = read(&[]).unwrap();
        assert_eq!(s.timeout, std::time::Duration::from_secs(10));
        assert_eq!(s.max_bytes, 8 * 1024 * 1024);
        assert!(s.user_agent.starts_with("searxng-gateway/"));
        assert_eq!(s.policy.private, PrivateAccess::Refused);
    }

    #[test]
    fn private_access_is_a_switch_or_a_list_of_networks() {
        assert_eq!(
            read(&[("FETCH_ALLOW_PRIVATE", "true")])
                .unwrap()
                .policy
                .private,
            PrivateAccess::Allowed
        );
        let nets = read(&[("FETCH_ALLOW_PRIVATE", "127.0.0.0/8, 10.1.2.3")]).unwrap();
        assert_eq!(
            nets.policy.private,
            PrivateAccess::Networks(vec![
                "127.0.0.0/8".parse().unwrap(),
                "10.1.2.3/32".parse().unwrap()
            ])
        );
        for (name, value) in [
            ("FETCH_ALLOW_PRIVATE", "sometimes"),
            ("FETCH_MAX_BYTES", "99999999999"),
            ("FETCH_TIMEOUT_SECONDS", "0"),
            ("FETCH_USER_AGENT", "bad\u{1}agent"),
        ] {
            assert_eq!(read(&[(name, value)]).unwrap_err().variable, name);
        }
    }
}
