//! What a self-hoster would put in front of SearXNG instead of the gateway: Debian's nginx, run by
//! the harness on loopback with a configuration written here, at its defaults where nothing is
//! said — a master and one worker per core, its access log written to a file — but one: a client
//! connection is never closed after a number of requests (`keepalive_requests`, 1000 by default,
//! would make the load generator reconnect; the gateway has no such limit).
//! - [`NginxRole::Cache`]: `proxy_cache` keyed by the request URI (`X-Cache-Status` says `HIT`),
//!   for cache hits (a.);
//! - [`NginxRole::Hop`]: a plain `proxy_pass` with upstream keep-alive, for misses (b.).
//!
//! Both proxy the same simulated SearXNG the gateway calls. Without nginx installed the rows that
//! compare with it say so instead.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use crate::loadgen::BoxError;
use crate::processes::{free_loopback_port, Server};

/// What the nginx in front of SearXNG does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NginxRole {
    /// `proxy_cache` (key: the request URI), every answer kept for 10 minutes.
    Cache,
    /// A plain reverse-proxy hop with upstream keep-alive.
    Hop,
}

impl NginxRole {
    fn label(self) -> &'static str {
        match self {
            NginxRole::Cache => "nginx-proxy-cache",
            NginxRole::Hop => "nginx-proxy-pass",
        }
    }
}

/// Whether this process runs as root (`id -u` says 0).
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Whether `nginx` is on `PATH`.
pub(crate) fn installed() -> bool {
    Command::new("nginx").arg("-v").output().is_ok()
}

impl Server {
    /// Starts nginx in `role` in front of `upstream`; its files (configuration, logs, cache) under
    /// `log_dir/<label>/`.
    pub(crate) async fn nginx(
        role: NginxRole,
        upstream: SocketAddr,
        log_dir: &Path,
    ) -> Result<Self, BoxError> {
        let addr = free_loopback_port()?;
        let prefix = log_dir.join(role.label());
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(prefix.join("cache"))?;

        let dir = prefix.display();
        let cache = match role {
            NginxRole::Cache => {
                "proxy_cache answers;\n            proxy_cache_key $request_uri;\n            \
                 proxy_cache_valid 200 10m;\n            add_header X-Cache-Status $upstream_cache_status;"
            }
            NginxRole::Hop => "",
        };
        // Started as root, nginx's workers would drop to `nobody`, who may not even reach a
        // checkout under a private directory (mktemp's 0700): they stay the harness's user.
        let user = if running_as_root() {
            "user root root;\n"
        } else {
            ""
        };
        let config = format!(
            "{user}worker_processes auto;\n\
             daemon off;\n\
             pid {dir}/nginx.pid;\n\
             error_log {dir}/error.log warn;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n\
                 access_log {dir}/access.log;\n\
                 keepalive_requests 100000000;\n\
                 client_body_temp_path {dir}/body;\n\
                 proxy_temp_path {dir}/proxy;\n\
                 fastcgi_temp_path {dir}/fastcgi;\n\
                 uwsgi_temp_path {dir}/uwsgi;\n\
                 scgi_temp_path {dir}/scgi;\n\
                 proxy_cache_path {dir}/cache levels=1:2 keys_zone=answers:10m max_size=1g inactive=60m use_temp_path=off;\n\
                 upstream searxng {{ server {upstream}; keepalive 64; }}\n\
                 server {{\n\
                     listen {addr};\n\
                     location / {{\n\
                         proxy_pass http://searxng;\n\
                         proxy_http_version 1.1;\n\
                         proxy_set_header Connection \"\";\n\
                         {cache}\n\
                     }}\n\
                 }}\n\
             }}\n"
        );
        let file = prefix.join("nginx.conf");
        std::fs::write(&file, config)?;
        let mut command = Command::new("nginx");
        command.arg("-p").arg(&prefix).arg("-c").arg(&file);
        Self::spawn(command, addr, log_dir, role.label(), "/healthz").await
    }
}
