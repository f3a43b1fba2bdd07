//! Where a read may go: the address policy every URL a client names, and every redirect hop, is
//! checked against before anything is sent. By default no read reaches an address that is
//! loopback, private (RFC 1918), link-local (cloud metadata at 169.254.169.254 among them), shared
//! (CGNAT, 100.64/10), unique-local (fc00::/7), multicast, broadcast, unspecified, or the
//! gateway's own listen address — IPv4 addresses inside IPv6 ones (mapped, compatible, NAT64) are
//! judged by the IPv4 address they carry. `FETCH_ALLOW_PRIVATE` turns the check off (`true`) or
//! allows some networks besides public addresses (CIDRs, for an intranet); the gateway's own
//! address stays refused either way (a read of itself would loop). `FETCH_ALLOW_HOSTS` and
//! `FETCH_DENY_HOSTS` narrow by name: an entry matches that host, a leading `.` matches a domain
//! and every name under it; a denied host is refused, and with an allow list only its hosts are
//! read.
//!
//! Hand-written: the checks are the standard library's address predicates plus the few ranges
//! it does not name yet, and `ipnet` for the operator's CIDRs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::IpNet;

/// Why an address or host is refused: the read fails as `forbidden_address`, nothing is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Forbidden {
    /// The host is on `FETCH_DENY_HOSTS`, or an allow list does not name it.
    #[error("the host is not allowed")]
    Host,
    /// The address is not a public one (loopback, private, link-local, …).
    #[error("the address is not public")]
    Address,
    /// The address is the gateway's own.
    #[error("the address is the gateway's own")]
    Own,
}

/// `FETCH_ALLOW_PRIVATE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PrivateAccess {
    /// Public addresses only (the default).
    Refused,
    /// Public addresses and these networks.
    Networks(Vec<IpNet>),
    /// Any address (the check is off).
    Allowed,
}

/// A list of host names (`FETCH_ALLOW_HOSTS`, `FETCH_DENY_HOSTS`), lower-case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostList {
    /// Exact names.
    exact: Vec<String>,
    /// Domains (from `.example.com`): the name and every name under it.
    domains: Vec<String>,
}

impl HostList {
    /// The list from its entries (`example.com`, `.example.com`).
    pub(crate) fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> Self {
        let mut list = Self::default();
        for entry in entries {
            let entry = entry.trim().trim_end_matches('.').to_ascii_lowercase();
            match entry.strip_prefix('.') {
                Some(domain) if !domain.is_empty() => list.domains.push(domain.to_owned()),
                Some(_) => {}
                None if !entry.is_empty() => list.exact.push(entry),
                None => {}
            }
        }
        list
    }

    fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.domains.is_empty()
    }

    pub(crate) fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        self.exact.iter().any(|e| e.eq_ignore_ascii_case(host))
            || self.domains.iter().any(|d| {
                host.eq_ignore_ascii_case(d)
                    || (host.len() > d.len()
                        && host.as_bytes()[host.len() - d.len() - 1] == b'.'
                        && host[host.len() - d.len()..].eq_ignore_ascii_case(d))
            })
    }
}

/// The whole policy. Cheap to share (`Arc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressPolicy {
    pub(crate) private: PrivateAccess,
    pub(crate) allow_hosts: HostList,
    pub(crate) deny_hosts: HostList,
    /// The gateway's own listen addresses (set when the listener is bound).
    pub own: Vec<SocketAddr>,
}

impl AddressPolicy {
    /// Whether `host` (a name or an address literal, as in a URL) may be read at all.
    pub(crate) fn check_host(&self, host: &str) -> Result<(), Forbidden> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if self.deny_hosts.matches(host) {
            return Err(Forbidden::Host);
        }
        if !self.allow_hosts.is_empty() && !self.allow_hosts.matches(host) {
            return Err(Forbidden::Host);
        }
        Ok(())
    }

    /// Whether a connection to `addr` may be made.
    pub(crate) fn check_addr(&self, addr: SocketAddr) -> Result<(), Forbidden> {
        let ip = canonical(addr.ip());
        let own = self.own.iter().any(|own| {
            own.port() == addr.port()
                && (canonical(own.ip()) == ip
                    || (own.ip().is_unspecified() && (is_local(ip) || !is_public(ip))))
        });
        if own {
            return Err(Forbidden::Own);
        }
        match &self.private {
            PrivateAccess::Allowed => Ok(()),
            _ if is_public(ip) => Ok(()),
            PrivateAccess::Networks(nets) if nets.iter().any(|net| net.contains(&ip)) => Ok(()),
            PrivateAccess::Networks(_) | PrivateAccess::Refused => Err(Forbidden::Address),
        }
    }
}

/// The IPv4 address an IPv6 one carries (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
/// `64:ff9b::a.b.c.d`), else the address itself.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            let o = v6.octets();
            let embedded = || Ipv4Addr::new(o[12], o[13], o[14], o[15]);
            if s[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_loopback() && !v6.is_unspecified() {
                return IpAddr::V4(embedded());
            }
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return IpAddr::V4(embedded());
            }
            ip
        }
        IpAddr::V4(_) => ip,
    }
}

/// Loopback or unspecified: the machine itself.
fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || ip.is_unspecified()
}

/// An address on the public internet: none of the ranges a read must not reach by default.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_unspecified()
        // "This network" (0/8), shared address space (CGNAT, 100.64/10), the IETF's 192.0.0/24,
        // benchmarking (198.18/15), reserved (240/4).
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local (fc00::/7), link-local (fe80::/10), site-local (fec0::/10, deprecated).
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn policy(private: PrivateAccess) -> AddressPolicy {
        AddressPolicy {
            private,
            allow_hosts: HostList::default(),
            deny_hosts: HostList::default(),
            own: Vec::new(),
        }
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_public_addresses_are_read_by_default() {
        let p = policy(PrivateAccess::Refused);
        for refused in [
            "127.0.0.1:80",
            "127.8.9.10:80",
            "10.1.2.3:80",
            "172.16.0.1:80",
            "192.168.1.1:80",
            "169.254.169.254:80",
            "100.64.0.1:80",
            "100.127.255.254:80",
            "0.0.0.0:80",
            "0.1.2.3:80",
            "224.0.0.1:80",
            "255.255.255.255:80",
            "240.0.0.1:80",
            "[::1]:80",
            "[::]:80",
            "[fc00::1]:80",
            "[fd12:3456::1]:80",
            "[fe80::1]:80",
            "[ff02::1]:80",
            "[::ffff:127.0.0.1]:80",
            "[::ffff:169.254.169.254]:80",
            "[::10.0.0.1]:80",
            "[64:ff9b::a9fe:a9fe]:80",
        ] {
            assert_eq!(
                p.check_addr(addr(refused)),
                Err(Forbidden::Address),
                "{refused}"
            );
        }
        for allowed in [
            "93.184.215.14:443",
            "1.1.1.1:80",
            "100.128.0.1:80",
            "172.32.0.1:80",
            "[2606:4700::1111]:443",
            "[::ffff:93.184.215.14]:443",
        ] {
            assert_eq!(p.check_addr(addr(allowed)), Ok(()), "{allowed}");
        }
    }

    #[test]
    fn allowing_private_networks_opens_those_only_or_everything() {
        let loopback = policy(PrivateAccess::Networks(vec!["127.0.0.0/8"
            .parse()
            .unwrap()]));
        assert_eq!(loopback.check_addr(addr("127.0.0.1:9000")), Ok(()));
        assert_eq!(
            loopback.check_addr(addr("169.254.169.254:80")),
            Err(Forbidden::Address)
        );
        assert_eq!(
            loopback.check_addr(addr("10.0.0.1:80")),
            Err(Forbidden::Address)
        );
        let all = policy(PrivateAccess::Allowed);
        assert_eq!(all.check_addr(addr("169.254.169.254:80")), Ok(()));
    }

    #[test]
    fn the_gateways_own_address_is_refused_even_when_private_ones_are_allowed() {
        let mut p = policy(PrivateAccess::Allowed);
        p.own = vec![addr("127.0.0.1:8080")];
        assert_eq!(p.check_addr(addr("127.0.0.1:8080")), Err(Forbidden::Own));
        assert_eq!(p.check_addr(addr("127.0.0.1:8081")), Ok(()));
        p.own = vec![addr("0.0.0.0:8080")];
        for own in ["127.0.0.1:8080", "192.168.1.20:8080", "[::1]:8080"] {
            assert_eq!(p.check_addr(addr(own)), Err(Forbidden::Own), "{own}");
        }
        assert_eq!(p.check_addr(addr("93.184.215.14:8080")), Ok(()));
    }

    #[test]
    fn host_lists_match_names_and_domains_and_deny_wins() {
        let mut p = policy(PrivateAccess::Refused);
        p.deny_hosts = HostList::new(["evil.example", ".tracker.example"]);
        assert_eq!(p.check_host("evil.example"), Err(Forbidden::Host));
        assert_eq!(p.check_host("EVIL.example."), Err(Forbidden::Host));
        assert_eq!(p.check_host("a.b.tracker.example"), Err(Forbidden::Host));
        assert_eq!(p.check_host("tracker.example"), Err(Forbidden::Host));
        assert_eq!(p.check_host("nottracker.example"), Ok(()));
        assert_eq!(p.check_host("sub.evil.example"), Ok(()));
        p.allow_hosts = HostList::new([".docs.example", "wiki.example", ".tracker.example"]);
        assert_eq!(p.check_host("docs.example"), Ok(()));
        assert_eq!(p.check_host("api.docs.example"), Ok(()));
        assert_eq!(p.check_host("wiki.example"), Ok(()));
        assert_eq!(p.check_host("other.example"), Err(Forbidden::Host));
        assert_eq!(
            p.check_host("x.tracker.example"),
            Err(Forbidden::Host),
            "deny wins"
        );
        assert_eq!(p.check_host("[::1]"), Err(Forbidden::Host));
    }
}
