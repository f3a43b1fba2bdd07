//! The demo binary as a user runs it: its exit status and what it writes when `LOG_LEVEL` is wrong, when the
//! port is taken, when its output is piped, and when it gets SIGTERM. Loopback and port 0 only.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The demo binary with a clean environment for what it reads.
fn demo() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_searxng-gateway-demo"));
    command.env_remove("LISTEN_ADDR").env_remove("LOG_LEVEL");
    command
}

#[test]
fn an_invalid_log_level_exits_2_with_one_line_naming_it() {
    let output = demo()
        .env("LOG_LEVEL", "verbose")
        .args(["--rounds", "1", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("LOG_LEVEL=\"verbose\""), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_taken_port_exits_1_saying_so() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();

    let output = demo()
        .args(["--rounds", "1", "--listen", &addr])
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!("{addr} is already in use")),
        "{stderr}"
    );
}

#[test]
fn a_piped_round_prints_every_step_without_colour_codes_and_exits_0() {
    let output = demo()
        .env("LOG_LEVEL", "info")
        .args(["--rounds", "1", "--pause", "0", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();

    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "{stderr}\n{stdout}");
    assert!(stdout.contains("\n[8] The metrics\n"), "{stdout}");
    assert!(
        stdout.ends_with("All rounds done.\nDemo stopped.\n"),
        "{stdout}"
    );
    assert!(
        !stderr.is_empty(),
        "LOG_LEVEL=info writes the gateway's lines"
    );
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

#[test]
fn sigterm_stops_it_cleanly() {
    let mut child = demo()
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (started_tx, started) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap_or(0) > 0 {
            if line.starts_with("=== Round 1 ===") {
                let _ = started_tx.send(());
                break;
            }
            line.clear();
        }
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        rest
    });
    let (exited_tx, exited) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = exited_tx.send(child.wait());
    });
    let kill = |signal: &str| {
        let _ = Command::new("kill").args([signal, &pid]).status();
    };

    let round_started = started.recv_timeout(Duration::from_secs(30)).is_ok();
    kill("-TERM");
    let status = exited.recv_timeout(Duration::from_secs(15));
    if status.is_err() {
        kill("-KILL");
    }

    assert!(round_started, "the first round never started");
    let status = status.expect("the demo exits after SIGTERM").unwrap();
    assert!(status.success(), "{status}");
    let rest = reader.join().unwrap();
    assert!(
        rest.ends_with("then the simulators stop.\nDemo stopped.\n"),
        "{rest}"
    );
}
