//! Name resolution for reads, with the address check in it: [`GuardedResolver::pin`] looks a host
//! up once, checks every address it got ([`AddressPolicy`], with the URL's port, so the gateway's
//! own address is caught too) and keeps the checked addresses; the HTTP client's resolver then
//! hands exactly those to the connector — no second lookup, so a name cannot answer differently
//! between the check and the connection (DNS rebinding). A name whose answer holds a single
//! refused address is refused whole: a mixed answer is how rebinding hides. A name the client asks
//! for that was not pinned gets no address at all.
//!
//! The lookup itself is a [`Lookup`]: the system resolver in the product, a fixed table in tests.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::address::{AddressPolicy, Forbidden};

/// How long a pinned answer serves the connector (a read and its redirects take at most a
/// minute; a later read pins again).
const PIN_FOR: Duration = Duration::from_secs(120);
/// Pinned names kept at most (older ones are dropped first).
const MAX_PINNED: usize = 4096;

/// Looks a host name up.
pub trait Lookup: Send + Sync + 'static {
    /// Every address `host` resolves to.
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>>;
}

/// The system resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Why a host could not be pinned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PinError {
    /// An address (or the host) is refused by the policy.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The name does not resolve.
    #[error("the name does not resolve")]
    Unresolved,
}

/// The resolver the reader's HTTP client uses. Cheap to share.
pub struct GuardedResolver {
    policy: Arc<AddressPolicy>,
    lookup: Arc<dyn Lookup>,
    pinned: Mutex<HashMap<String, (Vec<IpAddr>, Instant)>>,
}

impl std::fmt::Debug for GuardedResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedResolver")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl GuardedResolver {
    /// A resolver checking against `policy`, looking names up with `lookup`.
    pub(crate) fn new(policy: Arc<AddressPolicy>, lookup: Arc<dyn Lookup>) -> Self {
        Self {
            policy,
            lookup,
            pinned: Mutex::new(HashMap::new()),
        }
    }

    /// Resolves `host` for a connection to `port`, checks every address, and pins the answer for
    /// the connector. An address literal is checked as it is (the client does not resolve it).
    pub(crate) async fn pin(&self, host: &str, port: u16) -> Result<(), PinError> {
        self.policy.check_host(host)?;
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse::<IpAddr>() {
            self.policy.check_addr(SocketAddr::new(ip, port))?;
            return Ok(());
        }
        let addrs = self
            .lookup
            .lookup(host)
            .await
            .map_err(|_| PinError::Unresolved)?;
        if addrs.is_empty() {
            return Err(PinError::Unresolved);
        }
        for ip in &addrs {
            self.policy.check_addr(SocketAddr::new(*ip, port))?;
        }
        let now = Instant::now();
        let mut pinned = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        if pinned.len() >= MAX_PINNED {
            pinned.retain(|_, (_, at)| now.duration_since(*at) < PIN_FOR);
            if pinned.len() >= MAX_PINNED {
                pinned.clear();
            }
        }
        pinned.insert(host.to_ascii_lowercase(), (addrs, now));
        Ok(())
    }

    /// The addresses pinned for `host`, if they are still fresh.
    fn pinned(&self, host: &str) -> Option<Vec<IpAddr>> {
        let pinned = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        pinned
            .get(&host.to_ascii_lowercase())
            .filter(|(_, at)| at.elapsed() < PIN_FOR)
            .map(|(addrs, _)| addrs.clone())
    }
}

/// The connector's side: only pinned, checked addresses.
impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let addrs = self.pinned(name.as_str());
        Box::pin(async move {
            let Some(addrs) = addrs else {
                let refused: Box<dyn std::error::Error + Send + Sync> =
                    Box::new(Forbidden::Address);
                return Err(refused);
            };
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::super::address::{HostList, PrivateAccess};
    use super::*;

    /// A fixed table of names (tests).
    #[derive(Debug, Default)]
    pub(crate) struct TableLookup(pub(crate) HashMap<String, Vec<IpAddr>>);

    impl Lookup for TableLookup {
        fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
            let found = self.0.get(host).cloned();
            Box::pin(async move { found.ok_or_else(|| io::Error::other("no such name")) })
        }
    }

    fn resolver(private: PrivateAccess, table: &[(&str, &[&str])]) -> GuardedResolver {
        let table = table
            .iter()
            .map(|(name, ips)| {
                (
                    (*name).to_owned(),
                    ips.iter().map(|ip| ip.parse().unwrap()).collect(),
                )
            })
            .collect();
        GuardedResolver::new(
            Arc::new(AddressPolicy {
                private,
                allow_hosts: HostList::default(),
                deny_hosts: HostList::default(),
                own: vec!["127.0.0.1:8080".parse().unwrap()],
            }),
            Arc::new(TableLookup(table)),
        )
    }

    #[tokio::test]
    async fn a_name_is_pinned_only_when_every_address_it_has_is_allowed() {
        let r = resolver(
            PrivateAccess::Refused,
            &[
                ("public.example", &["93.184.215.14"]),
                ("inside.example", &["127.0.0.1"]),
                ("mixed.example", &["93.184.215.14", "10.0.0.5"]),
            ],
        );
        assert!(r.pin("public.example", 443).await.is_ok());
        assert_eq!(
            r.pinned("PUBLIC.example"),
            Some(vec!["93.184.215.14".parse().unwrap()])
        );
        for refused in ["inside.example", "mixed.example"] {
            assert!(matches!(
                r.pin(refused, 80).await,
                Err(PinError::Forbidden(Forbidden::Address))
            ));
            assert_eq!(r.pinned(refused), None, "{refused} was never pinned");
        }
        assert!(matches!(
            r.pin("nowhere.example", 80).await,
            Err(PinError::Unresolved)
        ));
        assert!(matches!(
            r.pin("169.254.169.254", 80).await,
            Err(PinError::Forbidden(Forbidden::Address))
        ));
    }

    #[tokio::test]
    async fn the_connector_gets_pinned_addresses_and_nothing_for_other_names() {
        use reqwest::dns::Resolve;
        let r = resolver(
            PrivateAccess::Allowed,
            &[("site.example", &["127.0.0.1", "::1"])],
        );
        r.pin("site.example", 9000).await.unwrap();
        let name = |n: &str| n.parse::<reqwest::dns::Name>().unwrap();
        let addrs: Vec<SocketAddr> = r.resolve(name("site.example")).await.unwrap().collect();
        assert_eq!(addrs.len(), 2);
        assert!(r.resolve(name("other.example")).await.is_err());
        assert!(matches!(
            r.pin("site.example", 8080).await,
            Err(PinError::Forbidden(Forbidden::Own))
        ));
    }
}
