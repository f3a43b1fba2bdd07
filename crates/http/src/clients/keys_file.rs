//! `API_KEYS_FILE`: who may search. One client per line,
//! `NAME:SHA256_HEX_OF_KEY[:REQUESTS_PER_MINUTE[:PREMIUM_CALLS_PER_DAY[:USD_PER_DAY]]]`, `#` comments and blank
//! lines ignored. A malformed line is a [`KeysFileError`] naming its line number (start-up stops
//! with exit 2; a SIGHUP reload keeps the clients it had). Only SHA-256 digests are ever read or
//! held: [`hash_line`] turns a key into its line (`searxng-gateway hash-key NAME`), and the key
//! itself is dropped there.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The SHA-256 digest of a key.
pub(crate) type KeyDigest = [u8; 32];

/// The longest client name (it becomes a metric label value).
const MAX_NAME_LEN: usize = 64;

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyEntry {
    /// The client's name, as logs, metrics and `/status` show it.
    pub(crate) name: String,
    /// SHA-256 of the client's key.
    pub(crate) digest: KeyDigest,
    /// Its own requests per minute, else `RATE_LIMIT_PER_MINUTE` (0: unlimited).
    pub(crate) requests_per_minute: Option<u32>,
    /// Its own premium calls per rolling 24 h, else `PREMIUM_CALLS_PER_DAY` (0: unlimited).
    pub(crate) premium_calls_per_day: Option<u32>,
    /// Its US dollars of premium calls per rolling 24 h, in micro-dollars (none or 0: unlimited).
    pub(crate) micro_usd_per_day: Option<u64>,
}

/// Why the file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KeysFileError {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Unreadable(String),
    /// A line does not follow the format.
    #[error("line {line}: {problem}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong (never the line's text: it holds a digest).
        problem: String,
    },
}

/// Reads and parses the file at `path`.
pub(crate) fn read(path: &Path) -> Result<Vec<KeyEntry>, KeysFileError> {
    let text =
        std::fs::read_to_string(path).map_err(|err| KeysFileError::Unreadable(err.to_string()))?;
    parse(&text)
}

/// Parses the file's text.
pub(crate) fn parse(text: &str) -> Result<Vec<KeyEntry>, KeysFileError> {
    let mut entries: Vec<KeyEntry> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let malformed = |problem: String| KeysFileError::Malformed {
            line: index + 1,
            problem,
        };
        let entry = parse_line(line).map_err(malformed)?;
        if entries.iter().any(|e| e.name == entry.name) {
            return Err(malformed(format!(
                "client {:?} is listed twice",
                entry.name
            )));
        }
        if entries.iter().any(|e| e.digest == entry.digest) {
            return Err(malformed(
                "this key's digest is already another client's".to_owned(),
            ));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_line(line: &str) -> Result<KeyEntry, String> {
    let fields: Vec<&str> = line.split(':').map(str::trim).collect();
    if !(2..=5).contains(&fields.len()) {
        return Err(
            "expected NAME:SHA256_HEX[:REQUESTS_PER_MINUTE[:PREMIUM_CALLS_PER_DAY[:USD_PER_DAY]]]"
                .to_owned(),
        );
    }
    let name = fields[0];
    if !valid_name(name) {
        return Err(format!(
            "the name must be 1 to {MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ - (and not `anonymous`)"
        ));
    }
    let mut digest = [0u8; 32];
    hex::decode_to_slice(fields[1], &mut digest)
        .map_err(|_| "the key digest must be 64 hexadecimal digits (SHA-256)".to_owned())?;
    let number = |index: usize, what: &str| -> Result<Option<u32>, String> {
        match fields.get(index) {
            None => Ok(None),
            Some(&"") => Ok(None),
            Some(text) => text
                .parse::<u32>()
                .map(Some)
                .map_err(|_| format!("{what} must be a whole number (0: unlimited)")),
        }
    };
    let dollars =
        match fields.get(4) {
            None | Some(&"") => None,
            Some(text) => match text.parse::<f64>() {
                Ok(usd) if usd.is_finite() && (0.0..=1_000_000.0).contains(&usd) => {
                    Some(gateway_core::rolling::micro_usd(usd))
                }
                _ => return Err(
                    "USD_PER_DAY must be a number of US dollars from 0 to 1000000 (0: unlimited)"
                        .to_owned(),
                ),
            },
        };
    Ok(KeyEntry {
        name: name.to_owned(),
        digest,
        requests_per_minute: number(2, "REQUESTS_PER_MINUTE")?,
        premium_calls_per_day: number(3, "PREMIUM_CALLS_PER_DAY")?,
        micro_usd_per_day: dollars,
    })
}

/// A name usable as a metric label and a log field: short, plain, not the anonymous label.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name != super::ANONYMOUS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// SHA-256 of `key`.
pub(crate) fn digest(key: &[u8]) -> KeyDigest {
    Sha256::digest(key).into()
}

/// The file line for client `name` with `key` (`searxng-gateway hash-key NAME`): surrounding
/// whitespace (the newline `echo` adds) is not part of the key. An error for a name the file would
/// refuse or a blank key.
pub fn hash_line(name: &str, key: &str) -> Result<String, &'static str> {
    if !valid_name(name) {
        return Err(
            "the name must be 1 to 64 characters of A-Z a-z 0-9 . _ - (and not `anonymous`)",
        );
    }
    let key = key.trim();
    if key.is_empty() {
        return Err("the key read from stdin is blank");
    }
    Ok(format!("{name}:{}", hex::encode(digest(key.as_bytes()))))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const DIGEST: &str = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";

    #[test]
    fn reads_names_digests_and_optional_limits_skipping_comments_and_blanks() {
        let text = format!(
            "# team keys\n\nalice:{DIGEST}\n  bob:{}:30\ncarol:{}:0:100\ndave:{}::5\nerin:{}:::2.5\n",
            DIGEST.replace('2', "3"),
            DIGEST.replace('2', "4"),
            DIGEST.replace('2', "5"),
            DIGEST.replace('2', "6"),
        );
        let entries = parse(&text).unwrap();
        let view: Vec<_> = entries
            .iter()
            .map(|e| {
                (
                    e.name.as_str(),
                    e.requests_per_minute,
                    e.premium_calls_per_day,
                    e.micro_usd_per_day,
                )
            })
            .collect();
        assert_eq!(
            view,
            [
                ("alice", None, None, None),
                ("bob", Some(30), None, None),
                ("carol", Some(0), Some(100), None),
                ("dave", None, Some(5), None),
                ("erin", None, None, Some(2_500_000)),
            ]
        );
        assert_eq!(hex::encode(entries[0].digest), DIGEST);
    }

    #[test]
    fn a_malformed_line_is_refused_with_its_number() {
        for (bad, problem) in [
            ("alice", "expected NAME"),
            (&format!("alice:{DIGEST}:1:2:3:4"), "expected NAME"),
            (&format!("alice:{DIGEST}:1:2:lots"), "USD_PER_DAY"),
            (&format!("alice:{DIGEST}:1:2:-1"), "USD_PER_DAY"),
            ("alice:abc", "64 hexadecimal"),
            (&format!("al ice:{DIGEST}"), "the name"),
            (&format!("anonymous:{DIGEST}"), "the name"),
            (&format!("alice:{DIGEST}:many"), "REQUESTS_PER_MINUTE"),
            (&format!("alice:{DIGEST}:1:-2"), "PREMIUM_CALLS_PER_DAY"),
        ] {
            let text = format!("# header\n\n{bad}\n");
            match parse(&text) {
                Err(KeysFileError::Malformed {
                    line: 3,
                    problem: p,
                }) => {
                    assert!(p.contains(problem), "{bad}: {p}");
                    assert!(!p.contains(DIGEST), "the digest stays out of the message");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_name_or_a_key_listed_twice_is_refused() {
        let twice = format!("a:{DIGEST}\na:{}\n", DIGEST.replace('2', "3"));
        assert!(matches!(
            parse(&twice),
            Err(KeysFileError::Malformed { line: 2, .. })
        ));
        let shared = format!("a:{DIGEST}\nb:{DIGEST}\n");
        assert!(matches!(
            parse(&shared),
            Err(KeysFileError::Malformed { line: 2, .. })
        ));
    }

    #[test]
    fn hash_line_writes_a_line_the_parser_reads_back_to_the_same_key() {
        let line = hash_line("ci-bot", "s3cret\n").unwrap();
        assert!(!line.contains("s3cret"));
        let entries = parse(&line).unwrap();
        assert_eq!(entries[0].name, "ci-bot");
        assert_eq!(entries[0].digest, digest(b"s3cret"));
        assert!(hash_line("bad name", "k").is_err());
        assert!(hash_line("ok", "  \n").is_err());
    }
}
