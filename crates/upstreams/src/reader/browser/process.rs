//! The Chromium process: its command line (headless, no network of its own, no UDP, no first
//! run, a fresh profile directory per launch), the DevTools address it prints, the resident
//! memory of its whole process tree (read from `/proc`), and its end — the whole process group
//! killed, so no renderer outlives it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Why Chromium could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    /// The binary could not be run.
    #[error("the browser could not be started: {0}")]
    Spawn(std::io::Error),
    /// It ran but never printed its DevTools address.
    #[error("the browser printed no DevTools address")]
    NoDevtools,
    /// The DevTools connection failed.
    #[error("the DevTools connection failed: {0}")]
    Connect(String),
}

/// A running Chromium: the child, its DevTools address, its profile directory (removed on drop).
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) child: Child,
    pub(crate) devtools: String,
    pub(crate) pid: u32,
    profile: PathBuf,
    /// Bound, never listening, for as long as this process lives: the proxy every request
    /// Chromium would make itself goes to, so it fails at once ([`super`]'s fence). Held here,
    /// not bound then released, so nothing else can take the port and answer Chromium
    /// ([`dead_port`]); [`Drop`] kills the browser before this field closes.
    _dead_proxy: socket2::Socket,
}

impl Drop for Process {
    fn drop(&mut self) {
        kill_group(self.pid);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Starts `program` headless, within `timeout` until it prints its DevTools address.
pub(crate) async fn launch(program: &Path, timeout: Duration) -> Result<Process, LaunchError> {
    let dead_proxy = dead_port().map_err(LaunchError::Spawn)?;
    let port = dead_proxy
        .local_addr()
        .ok()
        .and_then(|addr| addr.as_socket())
        .map_or(9, |addr| addr.port());
    let profile = std::env::temp_dir().join(format!(
        "searxng-gateway-browser-{}-{}",
        std::process::id(),
        next_profile()
    ));
    std::fs::create_dir_all(&profile).map_err(LaunchError::Spawn)?;
    let mut command = Command::new(program);
    command
        .args(arguments(&profile, port))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own group: the renderers and helpers it forks are killed with it.
        .process_group(0);
    let mut child = command.spawn().map_err(LaunchError::Spawn)?;
    let pid = child.id().ok_or(LaunchError::NoDevtools)?;
    let stderr = child.stderr.take().ok_or(LaunchError::NoDevtools)?;
    let mut lines = BufReader::new(stderr).lines();
    let devtools = tokio::time::timeout(timeout, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(at) = line.find("ws://") {
                return Some(line[at..].trim().to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten();
    let mut process = Process {
        child,
        devtools: String::new(),
        pid,
        profile,
        _dead_proxy: dead_proxy,
    };
    // Without an address the process is dropped here: killed, its profile removed.
    process.devtools = devtools.ok_or(LaunchError::NoDevtools)?;
    // Chromium's later messages are not read; draining them keeps its pipe from filling.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(process)
}

/// A loopback port that is bound but never listens: a connection to it is refused at once (a
/// TCP reset, Chromium's `ERR_PROXY_CONNECTION_FAILED`, and a fixed `--proxy-server` has no
/// fallback to direct connections). While the socket is open nothing else can have the port:
/// it sets neither `SO_REUSEADDR` nor `SO_REUSEPORT`, and Linux lets a second socket bind a
/// bound port only when both set one of them (a wildcard or IPv6 dual-stack bind conflicts
/// too); nor does the kernel hand a bound port out as a connection's ephemeral source port.
/// Rather than a listener that accepts and closes (a task to own, and a connection that did
/// reach something), the refusal is the kernel's, with nothing running.
fn dead_port() -> std::io::Result<socket2::Socket> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
    Ok(socket)
}

fn next_profile() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Chromium's command line.
fn arguments(profile: &Path, dead_proxy: u16) -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless",
        "--remote-debugging-port=0",
        "--remote-debugging-address=127.0.0.1",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-client-side-phishing-detection",
        "--disable-domain-reliability",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-hang-monitor",
        "--disable-popup-blocking",
        "--disable-prompt-on-repost",
        "--metrics-recording-only",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        "--use-mock-keychain",
        // Every frame in its page's process, so the page's fence sees its requests.
        "--disable-site-isolation-trials",
        "--disable-features=IsolateOrigins,site-per-process,Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater",
        // WebRTC and every other UDP off.
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--enforce-webrtc-ip-permission-check",
        // Chromium's own network goes nowhere: no name resolves, every connection goes to a
        // proxy that refuses it. Only what the fence fetches and hands over reaches a page.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-bypass-list=<-loopback>",
        "--disable-quic",
        "about:blank",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    args.push(format!("--proxy-server=http://127.0.0.1:{dead_proxy}"));
    args.push(format!("--user-data-dir={}", profile.display()));
    if is_root() {
        // Chromium's sandbox needs user namespaces it cannot have as root.
        args.push("--no-sandbox".to_owned());
    }
    args
}

/// Whether the gateway runs as root (`/proc/self/status`'s effective uid).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
            .unwrap_or(false)
    })
}

/// The resident memory, in bytes, of `root` and every process descending from it: the sum of
/// their anonymous and shared-memory pages (`RssAnon`, `RssShmem`; `VmRSS` counts the shared
/// libraries once per process, about 900 MB for an idle Chromium's nine processes against 230 MB
/// of their own).
pub(crate) fn tree_rss(root: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut parent_of = HashMap::new();
    let mut rss_of = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok())
        };
        if let Some(ppid) = field("PPid:") {
            parent_of.insert(pid, ppid as u32);
        }
        // Anonymous and shared-memory pages: the file-backed ones are Chromium's libraries,
        // resident once but counted in every one of its processes.
        let private = field("RssAnon:").unwrap_or(0) + field("RssShmem:").unwrap_or(0);
        rss_of.insert(pid, private * 1024);
    }
    let descends = |mut pid: u32| {
        for _ in 0..64 {
            if pid == root {
                return true;
            }
            match parent_of.get(&pid) {
                Some(&parent) if parent != 0 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    rss_of
        .iter()
        .filter(|(pid, _)| descends(**pid))
        .map(|(_, rss)| rss)
        .sum()
}

/// Kills the process group `pid` leads (Chromium and what it forked).
pub(crate) fn kill_group(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// A port nothing listens on, released at once (for the command line's test only; the browser's
/// own is [`dead_port`], held).
#[cfg(test)]
pub(crate) fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(9, |a| a.port())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_of_this_process_has_its_memory() {
        assert!(tree_rss(std::process::id()) > 0);
        assert_eq!(tree_rss(u32::MAX - 1), 0);
    }

    /// A socket asking for every reuse there is, bound to `port` on `ip`.
    fn contender(ip: [u8; 4], port: u16) -> std::io::Result<socket2::Socket> {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.bind(&std::net::SocketAddr::from((ip, port)).into())?;
        Ok(socket)
    }

    #[test]
    fn the_dead_proxy_refuses_and_no_one_else_can_take_its_port() {
        let dead = dead_port().unwrap();
        let port = dead.local_addr().unwrap().as_socket().unwrap().port();
        let refused = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
        for ip in [[127, 0, 0, 1], [0, 0, 0, 0]] {
            let taken = contender(ip, port).unwrap_err();
            assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse, "{ip:?}");
        }
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_err());
        drop(dead);
        assert!(
            contender([127, 0, 0, 1], port).is_ok(),
            "the port is free again once the browser is gone"
        );
    }

    #[test]
    fn chromium_is_told_to_reach_nothing_itself() {
        let args = arguments(Path::new("/tmp/p"), closed_port());
        assert!(args
            .iter()
            .any(|a| a == "--host-resolver-rules=MAP * ~NOTFOUND"));
        assert!(args
            .iter()
            .any(|a| a.starts_with("--proxy-server=http://127.0.0.1:")));
        assert!(args.iter().any(|a| a == "--proxy-bypass-list=<-loopback>"));
        assert!(args.iter().any(|a| a.contains("disable_non_proxied_udp")));
    }
}
