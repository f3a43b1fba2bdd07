#!/usr/bin/env python3
"""Fails on a broken link in the book (docs/) or in the Markdown that feeds it.

Usage: python3 scripts/check-book-links.py        (after `mdbook build docs`; scripts/book.sh runs both)

Two passes, each printing every broken link it finds with the file it is in; the exit status is 1 when
either found one, else 0. Standard library only.

1. The sources, as GitHub shows them. Every Markdown file under docs/src, every file those pages pull in
   with `{{#include …}}` (ARCHITECTURE.md, TESTING.md and BENCHMARKS.md at the repository's root), and
   README.md: each link, image and reference definition whose target is relative (no `scheme:`, not
   `//host`, not only `#fragment`) must name a file or folder that exists, resolved from the folder of the
   file the link is written in. When the target is a Markdown file and carries a `#fragment`, the fragment
   must be one of that file's heading anchors, as GitHub makes them (lower case; letters, digits, `-` and
   `_` kept, each space a `-`, everything else dropped; a repeated heading gets `-1`, `-2`, …). A same-file
   `#fragment` is checked the same way. Links inside code (fenced blocks, `inline spans`) are text, not
   links. An include whose file is missing is broken too.

2. The built book, as a reader clicks it. Every HTML page under docs/book except 404.html (which a web
   server serves from the site's root, so its links are relative to that root, not to the file): each
   `href` (and each `src`) that is relative is resolved from the page's folder.
   - `#fragment` alone must be an `id` (or an `<a name>`) of the same page.
   - A target inside docs/book that exists is fine, provided its `#fragment`, if any, is an id in it.
   - A target outside docs/book (written `../../crates/…` in a chapter, so that it works both on GitHub and
     from a local build) is a link to the repository, not to the book: not checked here (pass 1 did).
   - A target inside docs/book that does not exist is broken — unless the page took the link verbatim from a
     document it includes from outside docs/src (mdBook turns `X.md` into `X.html`; print.html, every chapter
     in one page, puts the chapter's folder in front): such a link is written for the repository's root,
     where pass 1 found it, and the book cannot serve it.
   Links with a scheme (`https:`, `mailto:`, …) and protocol-relative ones (`//host`) are external and
   never checked.

mdBook turns each `.md` link between chapters into `.html`, so a chapter link to a missing page fails pass
1 (no such `.md`) and a link to a missing heading of a chapter fails pass 2 (no such id).
"""

from __future__ import annotations

import html.parser
import posixpath
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "docs" / "src"
BOOK = REPO / "docs" / "book"

INCLUDE = re.compile(r"\{\{#(?:include|rustdoc_include)\s+([^}\s]+)\s*\}\}")
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_ATTRIBUTE = re.compile(r"\b(?:href|src)\s*=\s*\"([^\"]*)\"")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def is_external(target: str) -> bool:
    return bool(SCHEME.match(target)) or target.startswith("//")


def relative_name(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


# --- Markdown: the sources --------------------------------------------------------------------


def prose_lines(text: str):
    """Yields (line number, line) outside fenced code blocks, with inline code spans blanked."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.lstrip()
        marker = stripped[:3]
        if fence is None and marker in ("```", "~~~"):
            fence = marker
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield number, CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def heading_text(raw: str) -> str:
    """The text a heading renders to: link and emphasis markup dropped, code spans kept as their text."""
    text = re.sub(r"\s*\{#[^}]*\}\s*$", "", raw)  # mdBook's heading attributes
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "")
    text = re.sub(r"(\*+)([^*]+)\1", r"\2", text)
    return text


def slug(text: str) -> str:
    """GitHub's heading anchor (mdBook's `id_from_content` is the same rule)."""
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def markdown_anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fence = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        stripped = line.lstrip()
        if fence is None and stripped[:3] in ("```", "~~~"):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        match = HEADING.match(line)
        if not match:
            continue
        explicit = re.search(r"\{#([^}\s]+)\}\s*$", match.group(2))
        base = explicit.group(1) if explicit else slug(heading_text(match.group(2)))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
        anchors.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line))
    return anchors


def markdown_targets(path: Path):
    """Yields (line number, target) of every link, image and reference definition in a Markdown file."""
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        if INCLUDE.search(line):
            continue
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)
        for match in HTML_ATTRIBUTE.finditer(line):
            yield number, match.group(1)
        match = REFERENCE_DEFINITION.match(line)
        if match:
            yield number, match.group(1)


def includes_of(path: Path) -> list[tuple[int, str, Path]]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        for match in INCLUDE.finditer(line):
            spec = match.group(1)
            file_part = spec.split(":", 1)[0]
            found.append((number, spec, (path.parent / file_part).resolve()))
    return found


def check_sources(broken: list[str]) -> set[Path]:
    """Pass 1. Returns the files included into the book from outside docs/src."""
    pages = sorted(SRC.rglob("*.md"))
    included_from_outside: set[Path] = set()
    files = list(pages) + [REPO / "README.md"]
    for page in pages:
        for number, spec, target in includes_of(page):
            if not target.is_file():
                broken.append(f"{relative_name(page)}:{number}: include of a missing file: {spec}")
                continue
            if SRC not in target.parents:
                included_from_outside.add(target)
            if target not in files:
                files.append(target)
    anchors_cache: dict[Path, set[str]] = {}

    def anchors(path: Path) -> set[str]:
        if path not in anchors_cache:
            anchors_cache[path] = markdown_anchors(path)
        return anchors_cache[path]

    for source in files:
        for number, target in markdown_targets(source):
            if not target or is_external(target):
                continue
            path_part, _, fragment = target.partition("#")
            path_part = unquote(path_part)
            if path_part.startswith("/"):
                broken.append(f"{relative_name(source)}:{number}: absolute path, not a relative link: {target}")
                continue
            resolved = (source.parent / path_part).resolve() if path_part else source
            if not resolved.exists():
                broken.append(f"{relative_name(source)}:{number}: no such file: {target}")
                continue
            if fragment and resolved.suffix == ".md" and unquote(fragment) not in anchors(resolved):
                broken.append(f"{relative_name(source)}:{number}: no heading #{fragment} in {relative_name(resolved)}")
    return included_from_outside


# --- HTML: the built book ---------------------------------------------------------------------


class PageLinks(html.parser.HTMLParser):
    """The ids a page defines and the links it holds."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[int, str]] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"])
        if tag == "a" and values.get("name"):
            self.ids.add(values["name"])
        for name in ("href", "src"):
            if values.get(name) is not None:
                self.links.append((self.getpos()[0], values[name]))

    handle_startendtag = handle_starttag


def parse_page(path: Path) -> PageLinks:
    parser = PageLinks()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def source_of(page: Path) -> Path | None:
    relative = page.relative_to(BOOK).with_suffix(".md")
    candidate = SRC / relative
    return candidate if candidate.is_file() else None


def verbatim_targets(sources: list[Path]) -> set[str]:
    """Link targets of the documents these pages include from outside docs/src, as mdBook writes them."""
    targets: set[str] = set()
    for source in sources:
        for _, _, included in includes_of(source):
            if included.is_file() and SRC not in included.parents:
                for _, target in markdown_targets(included):
                    targets.add(target)
                    path_part, hash_, fragment = target.partition("#")
                    if path_part.endswith(".md"):
                        targets.add(path_part[:-3] + ".html" + hash_ + fragment)
    return targets


def taken_verbatim(href: str, page: Path, targets: set[str]) -> bool:
    """Whether `href` is one of `targets`; print.html, every chapter in one page, prefixes each chapter's
    links with that chapter's folder."""
    if href in targets:
        return True
    return page == BOOK / "print.html" and any(href.endswith("/" + target) for target in targets)


def check_book(broken: list[str]) -> int:
    pages = sorted(p for p in BOOK.rglob("*.html") if p != BOOK / "404.html")
    parsed: dict[Path, PageLinks] = {}

    def page_of(path: Path) -> PageLinks:
        if path not in parsed:
            parsed[path] = parse_page(path)
        return parsed[path]

    book_root = BOOK.resolve()
    for page in pages:
        links = page_of(page)
        verbatim = None
        for line, href in links.links:
            if not href or is_external(href):
                continue
            parts = urlsplit(href)
            fragment = unquote(parts.fragment)
            if not parts.path:
                if fragment and fragment not in links.ids:
                    broken.append(f"{relative_name(page)}:{line}: no id #{fragment} on this page")
                continue
            if parts.path.startswith("/"):
                broken.append(f"{relative_name(page)}:{line}: absolute path: {href}")
                continue
            target = Path(posixpath.normpath(posixpath.join(str(page.parent.resolve()), unquote(parts.path))))
            if book_root not in target.parents and target != book_root:
                continue  # a repository file, checked in pass 1
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                if verbatim is None:
                    if page == BOOK / "print.html":
                        verbatim = verbatim_targets(sorted(SRC.rglob("*.md")))
                    else:
                        source = source_of(page)
                        verbatim = verbatim_targets([source] if source else [])
                if not taken_verbatim(href, page, verbatim):
                    broken.append(f"{relative_name(page)}:{line}: no such page or file: {href}")
                continue
            if fragment and target.suffix == ".html" and fragment not in page_of(target).ids:
                broken.append(f"{relative_name(page)}:{line}: no id #{fragment} in {relative_name(target)}")
    return len(pages)


def main() -> int:
    if not BOOK.is_dir():
        print(f"{relative_name(BOOK)} is missing: run `mdbook build docs` first", file=sys.stderr)
        return 2
    broken: list[str] = []
    check_sources(broken)
    pages = check_book(broken)
    for line in broken:
        print(f"broken link: {line}")
    if broken:
        print(f"{len(broken)} broken link(s)", file=sys.stderr)
        return 1
    print(f"book links: {pages} pages, every internal link lands")
    return 0


if __name__ == "__main__":
    sys.exit(main())
