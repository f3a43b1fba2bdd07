//! How the gateway's async work is scheduled (`RUNTIME`): which tokio runtime the binary builds,
//! how it binds `LISTEN_ADDR`, and which worker the current thread is.
//!
//! - `work-stealing`: one multi-thread runtime, one worker per core; any worker may run any
//!   task, so a request's tasks move between cores when one is idle.
//! - `thread-per-core`: one current-thread runtime per core, each with its own `SO_REUSEPORT`
//!   listener (the kernel spreads connections over them) and its own upstream connection pools
//!   ([`crate::upstream::UpstreamHttp`] keeps one client per worker): a request, its fan-out and
//!   the upstream connections it uses stay on one thread. The cache, breakers, metrics and the
//!   clients' state are shared. The binary's main thread is worker 0 and also runs the background
//!   work (refresh-ahead, probes, the Redis link); the server starts the others
//!   (`server::connection::serve_per_core`).
//!
//! BENCHMARKS.md has the A/B of the two on the harness's rows; the book's configuration reference ("Runtime") the choice.

use std::cell::Cell;
use std::net::SocketAddr;
use std::num::NonZeroUsize;

/// The stack of every thread the gateway starts (workers and tokio's blocking pool): a page's HTML
/// is parsed on a blocking thread, and a parser recurses with its nesting (the reader refuses
/// markup deeper than a few hundred levels; the rest fits in 8 MiB).
pub const THREAD_STACK_BYTES: usize = 8 * 1024 * 1024;

/// Listen backlog of each listener (tokio's own default for `TcpListener::bind`).
const BACKLOG: u32 = 1024;

/// `RUNTIME` and `WORKER_THREADS`: the scheduler and its threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// One multi-thread runtime with work stealing, `workers` threads.
    WorkStealing {
        /// Worker threads, one per core by default.
        workers: NonZeroUsize,
    },
    /// One current-thread runtime per worker, `workers` of them.
    ThreadPerCore {
        /// Worker threads, one per core by default.
        workers: NonZeroUsize,
    },
}

impl Runtime {
    /// The names `RUNTIME` accepts.
    pub const NAMES: &'static [&'static str] = &["thread-per-core", "work-stealing"];

    /// `name` as one of [`Self::NAMES`] (any case) with `workers` threads.
    pub fn parse(name: &str, workers: NonZeroUsize) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "work-stealing" => Some(Self::WorkStealing { workers }),
            "thread-per-core" => Some(Self::ThreadPerCore { workers }),
            _ => None,
        }
    }

    /// The name of this scheduler, as `RUNTIME` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkStealing { .. } => "work-stealing",
            Self::ThreadPerCore { .. } => "thread-per-core",
        }
    }

    /// Threads serving requests.
    pub fn workers(self) -> usize {
        match self {
            Self::WorkStealing { workers } | Self::ThreadPerCore { workers } => workers.get(),
        }
    }

    /// Upstream connection pools to keep, and listeners to accept on: one per worker under
    /// thread-per-core, else one.
    pub fn pools(self) -> usize {
        match self {
            Self::WorkStealing { .. } => 1,
            Self::ThreadPerCore { workers } => workers.get(),
        }
    }

    /// The runtime the binary runs on: the multi-thread one, or worker 0's current-thread one.
    pub fn build(self) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            Self::WorkStealing { workers } => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers.get())
                .enable_all()
                .thread_stack_size(THREAD_STACK_BYTES)
                .build(),
            Self::ThreadPerCore { .. } => worker_runtime(),
        }
    }

    /// Binds `addr` the way this scheduler serves it: under thread-per-core with `SO_REUSEPORT`,
    /// so that every worker can bind a listener of its own to the same address.
    pub async fn bind(self, addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
        match self {
            Self::WorkStealing { .. } => tokio::net::TcpListener::bind(addr).await,
            Self::ThreadPerCore { .. } => {
                let socket = if addr.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()?
                } else {
                    tokio::net::TcpSocket::new_v6()?
                };
                socket.set_reuseaddr(true)?;
                socket.set_reuseport(true)?;
                socket.bind(addr)?;
                socket.listen(BACKLOG)
            }
        }
    }
}

/// `WORKER_THREADS`, where 0 means one per core the process may use.
pub fn workers_or_cores(workers: usize) -> NonZeroUsize {
    NonZeroUsize::new(workers)
        .unwrap_or_else(|| std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN))
}

/// A worker's runtime under thread-per-core: current-thread, with timers and I/O, and tokio's
/// blocking pool at the gateway's stack size.
pub fn worker_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_stack_size(THREAD_STACK_BYTES)
        .build()
}

/// A listener for another worker on the address `listener` is bound to: its own socket with
/// `SO_REUSEPORT` when `listener` has it (the kernel then spreads connections over both), else a
/// duplicate of `listener`'s socket (one accept queue, whichever worker accepts first). Returned as
/// a std listener, to be registered with the worker's own runtime.
pub fn sibling_listener(
    listener: &tokio::net::TcpListener,
) -> std::io::Result<std::net::TcpListener> {
    let own = socket2::SockRef::from(listener);
    let sibling = if own.reuse_port()? {
        let addr = listener.local_addr()?;
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.bind(&addr.into())?;
        socket.listen(i32::try_from(BACKLOG).unwrap_or(i32::MAX))?;
        socket
    } else {
        own.try_clone()?
    };
    sibling.set_nonblocking(true)?;
    Ok(sibling.into())
}

thread_local! {
    static WORKER: Cell<usize> = const { Cell::new(0) };
}

/// The worker the current thread is (0 on any thread that is not a worker of its own: the main
/// thread, the work-stealing runtime's threads, the blocking pool).
pub fn current_worker() -> usize {
    WORKER.with(Cell::get)
}

/// Marks the current thread as worker `index` (a worker thread does this once, first).
pub fn become_worker(index: usize) {
    WORKER.with(|w| w.set(index));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_names_parse_and_print_back() {
        let three = NonZeroUsize::new(3).unwrap();
        for name in Runtime::NAMES {
            assert_eq!(Runtime::parse(name, three).unwrap().as_str(), *name);
            assert_eq!(Runtime::parse(name, three).unwrap().workers(), 3);
        }
        assert_eq!(
            Runtime::parse("Thread-Per-Core", three).map(Runtime::as_str),
            Some("thread-per-core")
        );
        assert_eq!(Runtime::parse("threads", three), None);
        assert_eq!(Runtime::parse("work-stealing", three).unwrap().pools(), 1);
        assert_eq!(Runtime::parse("thread-per-core", three).unwrap().pools(), 3);
    }

    #[test]
    fn zero_workers_means_one_per_core() {
        assert_eq!(
            workers_or_cores(0),
            std::thread::available_parallelism().unwrap()
        );
        assert_eq!(workers_or_cores(5).get(), 5);
    }

    #[test]
    fn a_thread_knows_its_worker() {
        assert_eq!(current_worker(), 0);
        let seen = std::thread::spawn(|| {
            become_worker(3);
            current_worker()
        })
        .join()
        .unwrap();
        assert_eq!(seen, 3);
        assert_eq!(current_worker(), 0);
    }

    /// Under thread-per-core every worker binds its own socket to the same port, and the kernel
    /// hands each of them connections; a listener bound without `SO_REUSEPORT` is shared instead.
    #[tokio::test]
    async fn siblings_share_the_port_with_reuseport_or_the_socket_without() {
        let tpc = Runtime::ThreadPerCore {
            workers: NonZeroUsize::new(2).unwrap(),
        };
        let first = tpc.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let second = sibling_listener(&first).unwrap();
        assert_eq!(second.local_addr().unwrap(), first.local_addr().unwrap());
        let second = tokio::net::TcpListener::from_std(second).unwrap();
        // Connections until each listener has accepted one (the kernel hashes by source port).
        let addr = first.local_addr().unwrap();
        let mut clients = Vec::new();
        let (mut on_first, mut on_second) = (0, 0);
        while on_first == 0 || on_second == 0 {
            clients.push(tokio::net::TcpStream::connect(addr).await.unwrap());
            tokio::select! {
                accepted = first.accept() => { accepted.unwrap(); on_first += 1; }
                accepted = second.accept() => { accepted.unwrap(); on_second += 1; }
            }
            assert!(clients.len() < 200, "one listener never got a connection");
        }

        let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dup = sibling_listener(&plain).unwrap();
        assert_eq!(dup.local_addr().unwrap(), plain.local_addr().unwrap());
        let dup = tokio::net::TcpListener::from_std(dup).unwrap();
        let _client = tokio::net::TcpStream::connect(plain.local_addr().unwrap())
            .await
            .unwrap();
        dup.accept().await.unwrap();
    }
}
