//! Jobs of this process kept under `STATE_DIR` (without `REDIS_URL`), so a restart resumes them:
//! `<STATE_DIR>/crawls/<id>.job.json` — the request, the status and counts, the failures, every
//! URL taken on and the frontier (the URLs in flight counted in it), rewritten atomically (a
//! temporary file, synced, renamed) at most every [`SNAPSHOT_EVERY`] and when the job ends — and
//! `<id>.pages.jsonl`, each page read appended as one line when read. At start every job file is
//! read back: an expired job's files are deleted, an ended job is served as it was, a running one
//! runs on from its frontier (its pages kept, each URL once; a page read again after the restart
//! is listed once).
//!
//! Read forgivingly, as the state file: a file this build cannot read is skipped with a warning,
//! a torn last line of pages (a crash mid-append) is dropped. Bounded: a pages file larger than
//! twice `CRAWL_MAX_BYTES` is not read.
//!
//! Hand-written: a few files of JSON with the standard library; nothing a crate does better.

use std::collections::HashSet;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::record::{from_unix_ms, status_of, unix_ms, FailureBlob, PageBlob, Spec};
use super::{CrawlFailure, CrawledPage, JobStatus};

/// How often a running job's snapshot is rewritten at most.
pub(crate) const SNAPSHOT_EVERY: Duration = Duration::from_secs(2);
const VERSION: u32 = 1;

/// A job's snapshot file.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    pub(crate) version: u32,
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) spec: Spec,
    pub(crate) created_ms: u64,
    pub(crate) expires_ms: u64,
    pub(crate) status: String,
    pub(crate) total: usize,
    pub(crate) failures: Vec<FailureBlob>,
    pub(crate) robots_blocked: Vec<String>,
    pub(crate) discovered: Vec<String>,
    /// URLs still to read, with their depth (those in flight included).
    pub(crate) frontier: Vec<(String, usize)>,
    /// Reads started (the limit is held against it).
    pub(crate) launched: usize,
    /// Text bytes kept.
    pub(crate) bytes: u64,
}

/// Where this process keeps its jobs.
#[derive(Debug, Clone)]
pub(crate) struct KeptJobs {
    dir: PathBuf,
}

impl KeptJobs {
    /// `<state_dir>/crawls`, created.
    pub(crate) fn new(state_dir: &Path) -> std::io::Result<Self> {
        let dir = state_dir.join("crawls");
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    fn snapshot_file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.job.json"))
    }

    fn pages_file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.pages.jsonl"))
    }

    /// Rewrites job `id`'s snapshot atomically. Blocking.
    pub(crate) fn write(&self, snapshot: &Snapshot) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(snapshot).map_err(std::io::Error::other)?;
        let file = self.snapshot_file(&snapshot.id);
        let temporary = file.with_extension("json.tmp");
        let mut out = std::fs::File::create(&temporary)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
        std::fs::rename(&temporary, &file)
    }

    /// Appends a page read to job `id`'s pages. Blocking.
    pub(crate) fn append(&self, id: &str, page: &CrawledPage) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(&PageBlob::of(page)).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.pages_file(id))?;
        out.write_all(&line)
    }

    /// Deletes job `id`'s files.
    pub(crate) fn forget(&self, id: &str) {
        let _ = std::fs::remove_file(self.snapshot_file(id));
        let _ = std::fs::remove_file(self.pages_file(id));
    }

    /// Every job kept, with its pages (each URL once); expired ones deleted. Blocking.
    pub(crate) fn load(&self, max_bytes: u64) -> Vec<(Snapshot, Vec<CrawledPage>)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let now = unix_ms(SystemTime::now());
        let mut jobs = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(id) = name.strip_suffix(".job.json") else {
                continue;
            };
            let snapshot = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Snapshot>(&bytes).ok())
                .filter(|s| s.version == VERSION && s.id == id);
            let Some(snapshot) = snapshot else {
                tracing::warn!(file = %path.display(), "STATE_DIR: crawl job file ignored (unreadable)");
                continue;
            };
            if snapshot.expires_ms <= now {
                self.forget(id);
                continue;
            }
            let pages = self.pages(id, max_bytes.saturating_mul(2));
            jobs.push((snapshot, pages));
        }
        jobs
    }

    fn pages(&self, id: &str, most: u64) -> Vec<CrawledPage> {
        let file = self.pages_file(id);
        let Ok(opened) = std::fs::File::open(&file) else {
            return Vec::new();
        };
        if opened.metadata().map_or(true, |m| m.len() > most) {
            tracing::warn!(file = %file.display(), "STATE_DIR: crawl pages file too large, not read");
            return Vec::new();
        }
        let mut seen = HashSet::new();
        std::io::BufReader::new(opened)
            .split(b'\n')
            .map_while(Result::ok)
            // A torn last line (a crash mid-append) does not parse and is dropped.
            .filter_map(|line| serde_json::from_slice::<PageBlob>(&line).ok())
            .filter(|page| seen.insert(page.url.clone()))
            .map(PageBlob::into_page)
            .collect()
    }
}

impl Snapshot {
    /// The failures as the job keeps them.
    pub(crate) fn failures(&self) -> Vec<CrawlFailure> {
        self.failures
            .iter()
            .map(|f| CrawlFailure {
                url: f.url.clone(),
                error: f.error.clone(),
                at: from_unix_ms(f.at_ms),
            })
            .collect()
    }

    /// The status as the job keeps it.
    pub(crate) fn status(&self) -> JobStatus {
        status_of(&self.status)
    }
}

/// A failure as a snapshot keeps it.
pub(crate) fn failure_blob(failure: &CrawlFailure) -> FailureBlob {
    FailureBlob {
        url: failure.url.clone(),
        error: failure.error.clone(),
        at_ms: unix_ms(failure.at),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use gateway_core::request::ReadFormat;
    use gateway_upstreams::reader::Document;

    fn page(url: &str) -> CrawledPage {
        CrawledPage {
            url: url.to_owned(),
            reads: vec![(
                ReadFormat::Markdown,
                Arc::new(Document {
                    url: url.to_owned(),
                    final_url: url.to_owned(),
                    title: Some("T".into()),
                    content: "text".into(),
                    format: ReadFormat::Markdown,
                    published: None,
                    language: None,
                    author: None,
                    site_name: None,
                    images: Vec::new(),
                    links: Vec::new(),
                    content_type: "text/html".into(),
                    bytes_read: 4,
                }),
            )],
        }
    }

    #[test]
    fn pages_come_back_once_each_and_a_torn_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptJobs::new(dir.path()).unwrap();
        kept.append("j", &page("http://a.test/1")).unwrap();
        kept.append("j", &page("http://a.test/2")).unwrap();
        kept.append("j", &page("http://a.test/1")).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(kept.pages_file("j"))
            .unwrap();
        file.write_all(b"{\"url\":\"http://a.test/3\",\"re")
            .unwrap();
        let pages = kept.pages("j", u64::MAX);
        let urls: Vec<&str> = pages.iter().map(|p| p.url.as_str()).collect();
        assert_eq!(urls, ["http://a.test/1", "http://a.test/2"]);
        assert!(
            kept.pages("j", 10).is_empty(),
            "a file over the bound is not read"
        );
    }
}
