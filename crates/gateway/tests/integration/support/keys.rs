//! Inbound keys for a test: an `API_KEYS_FILE` with one hashed line per client.

use std::io::Write;

/// A keys file with one line per `(name, key, limits)`; `limits` is appended to the line as
/// written (`""`, or `" rpm=2"` and the like).
pub(crate) fn keys_file(lines: &[(&str, &str, &str)]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for (name, key, limits) in lines {
        let line = searxng_gateway::clients::keys_file::hash_line(name, key).expect("valid");
        writeln!(file, "{line}{limits}").expect("write the keys file");
    }
    file
}
