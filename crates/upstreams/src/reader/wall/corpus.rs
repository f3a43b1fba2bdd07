//! The wall verdict on the two corpora of real pages beside the repository
//! (`shared/corpus/wcxb-dev`, 1,497 pages of seven types, and `shared/corpus/readability`, 130
//! articles): none of them is a wall, so any wall verdict on them is a defect.
//!
//! Extracting all 1,627 pages takes over two minutes in a debug build, so the test that always
//! runs judges every page as if extraction had found no text at all (`by_page(html, 0)`), which
//! is the hardest case: more extracted words can only turn a verdict into none, never into
//! another one. The read path itself (decode, extract, judge) over every page is the ignored test,
//! best run in a release build:
//! `cargo test --release -p searxng-gateway --lib wall::corpus -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::Command;

use url::Url;

use super::{by_page, Wall};
use crate::reader::{content, extract};
use gateway_core::request::ReadFormat;

/// The pages of `wcxb-dev` the detector refused before it judged what a reader sees (44 of them
/// wrongly): the file, the words extraction found, and the verdict. None of the readability
/// corpus was refused.
const REFUSED_BEFORE: &[(&str, usize, Wall)] = &[
    ("0185", 100, Wall::Captcha),   // product, training.linuxfoundation.org
    ("0259", 10, Wall::Cloudflare), // listing, www.hospitalitynet.org
    ("0384", 6, Wall::JavascriptShell), // article, www.lesswrong.com
    ("0501", 0, Wall::JavascriptShell), // forum, community.openai.com
    ("0503", 0, Wall::JavascriptShell), // forum, community.home-assistant.io
    ("0504", 0, Wall::JavascriptShell), // forum, users.rust-lang.org
    ("0505", 0, Wall::JavascriptShell), // forum, community.letsencrypt.org
    ("0506", 0, Wall::JavascriptShell), // forum, forum.obsidian.md
    ("0507", 0, Wall::JavascriptShell), // forum, discussion.fool.com
    ("0508", 0, Wall::JavascriptShell), // forum, forums.eveonline.com
    ("0509", 0, Wall::JavascriptShell), // forum, community.brave.app
    ("0510", 0, Wall::JavascriptShell), // forum, answers.netlify.com
    ("0511", 0, Wall::JavascriptShell), // forum, forum.mssociety.org.uk
    ("0512", 0, Wall::JavascriptShell), // forum, boards.straightdope.com
    ("0530", 107, Wall::Captcha),   // forum, www.mtbr.com
    ("0534", 23, Wall::Captcha),    // forum, www.toyotanation.com
    ("0543", 73, Wall::Cloudflare), // forum, forum.corsair.com
    ("0545", 99, Wall::Cloudflare), // forum, discussion.evernote.com
    ("0554", 0, Wall::JavascriptShell), // forum, community.netdata.cloud
    ("0557", 5, Wall::JavascriptShell), // forum, discuss.flarum.org
    ("0583", 10, Wall::Captcha),    // product, www.deathwishcoffee.com
    ("0585", 0, Wall::JavascriptShell), // product, ruggable.com
    ("0594", 140, Wall::Captcha),   // product, nordrepublic.com
    ("0595", 138, Wall::Captcha),   // product, karminhairtools.com
    ("0600", 42, Wall::Cloudflare), // product, goshopia.com
    ("0617", 126, Wall::Captcha),   // product, www.etsy.com
    ("0618", 8, Wall::Captcha),     // product, www.bestbuy.com
    ("0620", 42, Wall::Datadome),   // product, www.wayfair.com
    ("0631", 33, Wall::Perimeterx), // product, bg.iherb.com
    ("0632", 8, Wall::Captcha),     // collection, www.allbirds.com
    ("0638", 10, Wall::Captcha),    // collection, www.deathwishcoffee.com
    ("0767", 119, Wall::Perimeterx), // listing, www.samsclub.com
    ("1069", 6, Wall::JavascriptShell), // forum, forum.level1techs.com
    ("1126", 0, Wall::JavascriptShell), // forum, forum.lingq.com
    ("1591", 0, Wall::JavascriptShell), // forum, forum.hifiguides.com
    ("1764", 0, Wall::JavascriptShell), // forum, forum.audacityteam.org
    ("1976", 0, Wall::JavascriptShell), // forum, forum.asana.com
    ("2898", 14, Wall::Cloudflare), // product, pcpartpicker.com
    ("2914", 120, Wall::Cloudflare), // listing, www.producthunt.com
    ("2923", 19, Wall::Datadome),   // collection, www.wayfair.com
    ("2972", 20, Wall::Captcha),    // listing, netflixtechblog.com
    ("2991", 119, Wall::Captcha),   // product, www.ebay.com
    ("4203", 131, Wall::Perimeterx), // collection, www.walmart.com
    ("4204", 90, Wall::Captcha),    // listing, www.etsy.com
    ("4369", 81, Wall::Captcha),    // collection, www.surplusgiant.com
    ("4577", 0, Wall::JavascriptShell), // collection, www.express.com
];

/// Pages the corpus itself records as drawn by script alone (`spa`, an empty main content; of
/// 4577 its notes say "HTML contains only empty div#root"): JavaScript shells, rightly.
const CLIENT_RENDERED: &[&str] = &["0585", "4577"];

/// A page of a corpus: its name and its bytes as fetched.
struct Page {
    name: String,
    body: Vec<u8>,
}

/// The corpora's folder: `SHARED_CORPUS` (`.ci/run` sets it for a clone made elsewhere), else
/// `shared/corpus` beside the repository.
pub(crate) fn corpus_root() -> PathBuf {
    std::env::var_os("SHARED_CORPUS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
        PathBuf::from,
    )
}

/// The HTML of `wcxb-dev` page `id` (`NNNN`), as text; `None` (said on stderr) when the corpus is
/// not here: the tests of one page read it so.
pub(crate) fn wcxb_html(id: &str) -> Option<String> {
    let root = corpus_root().join("wcxb-dev/dev");
    if !root.exists() {
        eprintln!("{} is not here", root.display());
        return None;
    }
    Some(String::from_utf8_lossy(&wcxb_page(&corpus_root(), id).body).into_owned())
}

/// The ground truth of `wcxb-dev` page `id`: its URL and its main content (call after
/// [`wcxb_html`] found the corpus).
pub(crate) fn wcxb_truth(id: &str) -> (String, String) {
    let path = corpus_root().join(format!("wcxb-dev/dev/ground-truth/{id}.json"));
    let truth: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display())),
    )
    .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let field = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
    (
        field(&truth["url"]),
        field(&truth["ground_truth"]["main_content"]),
    )
}

/// Word-level F1 of `read` against `truth`, as WCXB scores it (lower-cased runs of letters,
/// digits and `_`, compared as multisets).
pub(crate) fn word_f1(read: &str, truth: &str) -> f64 {
    fn bag(text: &str) -> (std::collections::HashMap<String, usize>, usize) {
        let mut bag = std::collections::HashMap::new();
        let mut total = 0;
        for word in text
            .to_lowercase()
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|word| !word.is_empty())
        {
            *bag.entry(word.to_owned()).or_insert(0) += 1;
            total += 1;
        }
        (bag, total)
    }
    let ((read, read_total), (truth, truth_total)) = (bag(read), bag(truth));
    let common: usize = read
        .iter()
        .map(|(word, n)| (*n).min(truth.get(word).copied().unwrap_or(0)))
        .sum();
    if common == 0 {
        return 0.0;
    }
    let (precision, recall) = (
        common as f64 / read_total as f64,
        common as f64 / truth_total as f64,
    );
    2.0 * precision * recall / (precision + recall)
}

/// A folder's entries, sorted.
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("the corpus at {}: {err}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    entries
}

/// A `wcxb-dev` page (`NNNN`), decompressed.
fn wcxb_page(root: &Path, file: &str) -> Page {
    let path = root.join(format!("wcxb-dev/dev/html/{file}.html.gz"));
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(&path)
        .output()
        .unwrap_or_else(|err| panic!("gzip -dc {}: {err}", path.display()));
    assert!(out.status.success(), "gzip -dc {}", path.display());
    Page {
        name: format!("wcxb-dev/{file}"),
        body: out.stdout,
    }
}

/// Every page of both corpora.
fn every_page(root: &Path) -> Vec<Page> {
    let mut pages: Vec<Page> = sorted_entries(&root.join("wcxb-dev/dev/html"))
        .iter()
        .filter_map(|path| path.file_name()?.to_str()?.strip_suffix(".html.gz"))
        .map(|file| wcxb_page(root, file))
        .collect();
    for dir in sorted_entries(&root.join("readability/pages")) {
        let Ok(body) = std::fs::read(dir.join("source.html")) else {
            continue;
        };
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        pages.push(Page {
            name: format!("readability/{}", name.unwrap_or_default()),
            body,
        });
    }
    assert_eq!(pages.len(), 1_497 + 130, "both corpora, whole");
    pages
}

/// A page as a read decodes it (served as `text/html`, no charset).
fn decoded(page: &Page) -> String {
    let kind = content::kind_of(Some("text/html"), &page.body).expect("an HTML page");
    content::decode(&page.body, Some("text/html"), kind)
}

/// Whether the corpus records no main content for `wcxb-dev` page `file`.
fn recorded_empty(root: &Path, file: &str) -> bool {
    let path = root.join(format!("wcxb-dev/dev/ground-truth/{file}.json"));
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the ground truth is readable"))
            .expect("the ground truth is JSON");
    truth["ground_truth"]["main_content"]
        .as_str()
        .is_some_and(|text| text.trim().is_empty())
}

/// The verdicts `judge` gives, page by page, except the client-rendered pages' shell verdicts.
fn wrong_verdicts(pages: &[Page], judge: impl Fn(&str) -> Option<Wall>) -> Vec<String> {
    pages
        .iter()
        .filter_map(|page| {
            let wall = judge(&decoded(page))?;
            let file = page.name.strip_prefix("wcxb-dev/").unwrap_or_default();
            let expected = wall == Wall::JavascriptShell && CLIENT_RENDERED.contains(&file);
            (!expected).then(|| format!("{}: {}", page.name, wall.as_str()))
        })
        .collect()
}

#[test]
fn no_page_of_either_corpus_is_a_wall_even_when_extraction_finds_no_text() {
    let pages = every_page(&corpus_root());
    let wrong = wrong_verdicts(&pages, |html| by_page(html, 0));
    assert!(wrong.is_empty(), "judged walls:\n{}", wrong.join("\n"));
}

#[test]
fn the_pages_refused_before_are_read_and_only_the_client_rendered_ones_are_shells() {
    let root = corpus_root();
    for (file, words, before) in REFUSED_BEFORE {
        let html = decoded(&wcxb_page(&root, file));
        let now = by_page(&html, *words);
        if CLIENT_RENDERED.contains(file) {
            assert!(
                recorded_empty(&root, file),
                "{file}: the corpus has no text"
            );
            assert_eq!(now, Some(Wall::JavascriptShell), "{file}");
        } else {
            assert_eq!(now, None, "{file} ({words} words) was {}", before.as_str());
        }
    }
}

#[test]
#[ignore = "extracts all 1,627 pages: run in a release build with --ignored"]
fn no_page_of_either_corpus_is_a_wall_when_read() {
    let url = Url::parse("https://corpus.example/page").expect("a valid URL");
    let pages = every_page(&corpus_root());
    let wrong = wrong_verdicts(&pages, |html| {
        let extracted = extract::html(html, &url, ReadFormat::Markdown)?;
        by_page(html, extracted.words)
    });
    assert!(wrong.is_empty(), "judged walls:\n{}", wrong.join("\n"));
}
