//! Loopback ports chosen by the kernel, never fixed numbers.
//!
//! A child that can bind port 0 and say which port it got does so: the gateway (`LISTEN_ADDR=…:0`,
//! its start line) and Prometheus (`--web.listen-address=127.0.0.1:0`, its "Listening on" line).
//! Two cannot: `redis-server --port 0` turns TCP off, and granian (SearXNG's server) logs the `0` it
//! was given, not the port it bound. They start on [`unused_loopback_port`] and, when another
//! process took that port first (the child exits at once), start again on another one. An address
//! that must refuse connections is held bound and never listening ([`refusing_port`]).

/// A loopback port the kernel just handed out and that was released again: nothing listens on it until
/// someone binds it, so it serves both as "a free port to start a process on" and as "an address where
/// nothing answers" (a connection is refused).
pub fn unused_loopback_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("probe a free loopback port")
        .port()
}

/// A loopback port held bound but never listening, for as long as the returned socket lives: a
/// connection to it is refused, and no other process or test can take the port meanwhile (where
/// [`unused_loopback_port`], released at once, could be handed to the next listener).
pub fn refusing_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bind a loopback port");
    let port = socket.local_addr().expect("its address").port();
    (socket, port)
}
