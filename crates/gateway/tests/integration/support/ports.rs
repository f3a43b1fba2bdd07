//! Loopback ports chosen by the kernel, never fixed numbers.

/// A loopback port the kernel just handed out and that was released again: nothing listens on it until
/// someone binds it, so it serves both as "a free port to start a process on" and as "an address where
/// nothing answers" (a connection is refused).
pub fn unused_loopback_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("probe a free loopback port")
        .port()
}
