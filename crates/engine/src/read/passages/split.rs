//! A read document cut into passages along its own structure.
//!
//! The reader's documents are Markdown (headings `#`…`######`, paragraphs separated by blank
//! lines, list items, `|` table rows, fenced code) or plain text (paragraphs only); both are read
//! the same way, line by line, into blocks: a heading changes the heading path of what follows
//! and starts the next passage; a paragraph, a list item (with its indented continuation lines),
//! a table row and a whole code fence are each one block. Blocks of one section are packed into
//! passages of at most `max_chars` characters (Unicode scalar values, as Tavily counts), never
//! across a heading. A block longer than that is cut at sentence boundaries (Unicode's, through
//! `unicode-segmentation`; a code block at line ends), a sentence longer than that at word
//! boundaries, and a word longer than that (a long URL) wherever the limit falls.

use std::sync::Arc;

use unicode_segmentation::UnicodeSegmentation;

/// One passage of a page, in page order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Its text as the page has it (Markdown stays Markdown), at most the split's `max_chars`.
    pub text: String,
    /// The headings it sits under, outermost first (empty before the first heading).
    pub heading_path: Arc<[String]>,
}

/// What one block of the page is (a heading is not a block: it opens a section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Prose, or a list item, or a table row: cut between sentences when too long.
    Prose,
    /// A fenced code block: cut between lines when too long.
    Code,
}

/// `content` cut into passages of at most `max_chars` characters (at least 1), in page order.
pub fn split(content: &str, max_chars: usize) -> Vec<Passage> {
    let max_chars = max_chars.max(1);
    let mut out = Packer {
        max_chars,
        done: Vec::new(),
        open: String::new(),
        open_chars: 0,
        open_has_body: false,
        path: Arc::from(Vec::new()),
    };
    let mut headings: Vec<(usize, String)> = Vec::new();
    let mut lines = content.lines().peekable();
    let mut paragraph = String::new();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if let Some(fence) = fence_opening(line) {
            out.block(&paragraph, Block::Prose);
            paragraph.clear();
            let mut code = String::from(line);
            for next in lines.by_ref() {
                code.push('\n');
                code.push_str(next);
                if next.trim_start().starts_with(fence) {
                    break;
                }
            }
            out.block(&code, Block::Code);
        } else if let Some((level, title)) = heading(line) {
            out.block(&paragraph, Block::Prose);
            paragraph.clear();
            headings.retain(|(l, _)| *l < level);
            headings.push((level, title.to_owned()));
            out.heading(headings.iter().map(|(_, t)| t.clone()).collect(), trimmed);
        } else if trimmed.is_empty() || is_rule(trimmed) {
            out.block(&paragraph, Block::Prose);
            paragraph.clear();
        } else if is_list_item(line) || trimmed.starts_with('|') {
            out.block(&paragraph, Block::Prose);
            paragraph.clear();
            if is_table_separator(trimmed) {
                continue;
            }
            let mut item = String::from(trimmed);
            if !trimmed.starts_with('|') {
                // The item's own continuation lines: indented, not a new item.
                while let Some(next) = lines.peek() {
                    let continues = next.starts_with([' ', '\t'])
                        && !next.trim().is_empty()
                        && !is_list_item(next);
                    if !continues {
                        break;
                    }
                    item.push(' ');
                    item.push_str(next.trim());
                    lines.next();
                }
            }
            out.block(&item, Block::Prose);
        } else {
            if !paragraph.is_empty() {
                paragraph.push('\n');
            }
            paragraph.push_str(trimmed);
        }
    }
    out.block(&paragraph, Block::Prose);
    out.finish()
}

/// The passages being packed.
struct Packer {
    max_chars: usize,
    done: Vec<Passage>,
    /// The passage being filled, and its length in characters.
    open: String,
    open_chars: usize,
    /// Whether the open passage holds more than headings.
    open_has_body: bool,
    /// The heading path of the section being read.
    path: Arc<[String]>,
}

impl Packer {
    /// A new section under `path`, its heading `line` starting a passage: the open passage is
    /// closed, whatever room it had left, unless it holds only headings (a chapter's heading
    /// stays with its first section's).
    fn heading(&mut self, path: Vec<String>, line: &str) {
        if self.open_has_body {
            self.close();
        }
        self.path = Arc::from(path);
        let line = line.chars().take(self.max_chars).collect::<String>();
        self.push(&line, line.chars().count());
    }

    /// One block, packed beside the open passage when it fits, else in passages of its own.
    fn block(&mut self, text: &str, kind: Block) {
        let text = text.trim_matches('\n');
        if text.trim().is_empty() {
            return;
        }
        let chars = text.chars().count();
        if chars <= self.max_chars {
            self.push(text, chars);
            self.open_has_body = true;
            return;
        }
        self.close();
        self.open_has_body = true;
        let pieces = match kind {
            Block::Prose => text.split_sentence_bounds().collect::<Vec<_>>(),
            Block::Code => text.split_inclusive('\n').collect(),
        };
        for piece in pieces {
            let chars = piece.chars().count();
            if chars <= self.max_chars {
                self.push_inline(piece, chars);
            } else {
                for word in piece.split_word_bounds() {
                    self.push_word(word);
                }
            }
        }
        self.close();
    }

    /// A block that fits a passage: beside the open one (after a line end) when both fit.
    fn push(&mut self, text: &str, chars: usize) {
        if self.open_chars > 0 && self.open_chars + 1 + chars > self.max_chars {
            self.close();
        }
        if self.open_chars > 0 {
            self.open.push('\n');
            self.open_chars += 1;
        }
        self.open.push_str(text);
        self.open_chars += chars;
    }

    /// A piece of a long block (a sentence, a line), joined to the open passage as it came.
    fn push_inline(&mut self, piece: &str, chars: usize) {
        if self.open_chars + chars > self.max_chars {
            self.close();
            let piece = piece.trim_start();
            self.open.push_str(piece);
            self.open_chars += piece.chars().count();
            return;
        }
        self.open.push_str(piece);
        self.open_chars += chars;
    }

    /// A word of an overlong sentence; a word longer than a passage is cut where the limit falls.
    fn push_word(&mut self, word: &str) {
        let chars = word.chars().count();
        if chars <= self.max_chars {
            self.push_inline(word, chars);
            return;
        }
        for c in word.chars() {
            if self.open_chars + 1 > self.max_chars {
                self.close();
            }
            self.open.push(c);
            self.open_chars += 1;
        }
    }

    fn close(&mut self) {
        let text = self.open.trim_end();
        if !text.trim().is_empty() {
            self.done.push(Passage {
                text: text.to_owned(),
                heading_path: Arc::clone(&self.path),
            });
        }
        self.open.clear();
        self.open_chars = 0;
        self.open_has_body = false;
    }

    fn finish(mut self) -> Vec<Passage> {
        self.close();
        self.done
    }
}

/// An ATX heading (`## Title`, at most three spaces before it): its level and its text.
fn heading(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = line.trim_start();
    let level = rest.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let title = after.trim().trim_end_matches('#').trim();
    (!title.is_empty()).then_some((level, title))
}

/// The fence a code block opens with (```` ``` ```` or `~~~`), at most three spaces in.
fn fence_opening(line: &str) -> Option<&'static str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = line.trim_start();
    if indent > 3 {
        return None;
    }
    if rest.starts_with("```") {
        Some("```")
    } else if rest.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

/// `- item`, `* item`, `+ item`, `1. item`, `1) item` (indented or not).
fn is_list_item(line: &str) -> bool {
    let rest = line.trim_start();
    if let Some(after) = rest.strip_prefix(['-', '*', '+']) {
        return after.starts_with(' ') && !is_rule(rest);
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (1..=9).contains(&digits)
        && rest[digits..].starts_with(['.', ')'])
        && rest[digits + 1..].starts_with(' ')
}

/// A thematic break: `---`, `***`, `___` (spaces allowed between).
fn is_rule(trimmed: &str) -> bool {
    let Some(mark) = trimmed
        .chars()
        .next()
        .filter(|c| matches!(c, '-' | '*' | '_'))
    else {
        return false;
    };
    let mut marks = 0;
    for c in trimmed.chars() {
        if c == mark {
            marks += 1;
        } else if c != ' ' && c != '\t' {
            return false;
        }
    }
    marks >= 3
}

/// A table's header separator row (`|---|:--:|`): no text of its own.
fn is_table_separator(trimmed: &str) -> bool {
    trimmed.contains('-')
        && trimmed
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn texts(passages: &[Passage]) -> Vec<&str> {
        passages.iter().map(|p| p.text.as_str()).collect()
    }

    const PAGE: &str = "Intro paragraph before any heading.\n\n\
        # Guide\n\nThe guide starts here.\n\n\
        ## Install\n\n- Download the archive.\n- Unpack it\n  into a folder.\n\n\
        ## Tables\n\n| name | value |\n|---|---|\n| alpha | 1 |\n| beta | 2 |\n\n\
        ### Code\n\n```rust\nfn main() {}\n\nlet x = 1;\n```\n\n\
        # Other\n\nLast words.\n";

    #[test]
    fn sections_keep_their_heading_path_and_never_share_a_passage() {
        let passages = split(PAGE, 500);
        let paths: Vec<Vec<&str>> = passages
            .iter()
            .map(|p| p.heading_path.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(
            paths,
            vec![
                vec![],
                vec!["Guide"],
                vec!["Guide", "Install"],
                vec!["Guide", "Tables"],
                vec!["Guide", "Tables", "Code"],
                vec!["Other"],
            ]
        );
        assert_eq!(passages[0].text, "Intro paragraph before any heading.");
        assert_eq!(
            passages[2].text,
            "## Install\n- Download the archive.\n- Unpack it into a folder."
        );
        assert_eq!(
            passages[3].text, "## Tables\n| name | value |\n| alpha | 1 |\n| beta | 2 |",
            "the separator row carries no text"
        );
        assert!(
            passages[4]
                .text
                .contains("```rust\nfn main() {}\n\nlet x = 1;\n```"),
            "a code fence is one block, its blank line kept: {:?}",
            passages[4].text
        );
    }

    #[test]
    fn blocks_are_packed_up_to_the_limit_and_no_further() {
        let page = "One two three.\n\nFour five six.\n\nSeven eight nine.";
        assert_eq!(
            texts(&split(page, 30)),
            ["One two three.\nFour five six.", "Seven eight nine."]
        );
        assert_eq!(texts(&split(page, 500)).len(), 1);
    }

    #[test]
    fn a_long_paragraph_is_cut_between_sentences() {
        let sentence = "This sentence has exactly some words in it. ";
        let paragraph = sentence.repeat(30);
        let passages = split(&paragraph, 200);
        assert!(passages.len() > 1);
        for passage in &passages {
            assert!(passage.text.chars().count() <= 200, "{:?}", passage.text);
            assert!(
                passage.text.starts_with("This") && passage.text.ends_with('.'),
                "whole sentences: {:?}",
                passage.text
            );
        }
    }

    #[test]
    fn an_overlong_sentence_is_cut_between_words_and_an_overlong_word_anywhere() {
        let words = "word ".repeat(100);
        for passage in split(&words, 42) {
            assert!(passage.text.chars().count() <= 42);
            assert!(!passage.text.contains("wor ") && passage.text.ends_with("word"));
        }
        let url = format!("https://example.com/{}", "é".repeat(300));
        let passages = split(&url, 100);
        assert!(passages.iter().all(|p| p.text.chars().count() <= 100));
        assert_eq!(
            passages.iter().map(|p| p.text.as_str()).collect::<String>(),
            url
        );
    }

    #[test]
    fn plain_text_is_paragraphs() {
        let text = "First paragraph line one\nline two.\n\nSecond paragraph.";
        assert_eq!(
            texts(&split(text, 20)),
            [
                "First paragraph line",
                "one\nline two.",
                "Second paragraph."
            ]
        );
    }

    #[test]
    fn what_is_not_a_heading_or_an_item_stays_text() {
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("    # indented code"), None);
        assert_eq!(heading("### Title ###"), Some((3, "Title")));
        assert!(is_list_item("  1. first") && is_list_item("* star"));
        assert!(!is_list_item("---") && !is_list_item("-dash") && !is_list_item("3.14"));
        assert!(is_rule("* * *") && is_table_separator("|:--|--:|"));
    }
}
