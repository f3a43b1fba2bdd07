#!/usr/bin/env python3
"""Writes the hostile pages the integration tests read (tests/integration/hostile_pages.rs).

Each is small and valid enough to reach the parser, and each took the gateway down or held a
thread for minutes before the parse moved into bounded worker processes (issue #39):

- xobject-self.pdf: a form XObject that draws itself (`/X1 Do` inside X1): pdf-extract recursed
  until the stack overflowed and the process aborted.
- deflate-bomb.pdf: one content stream compressed twice (16 MiB of text in a few hundred bytes)
  referenced 1,000 times by its page: gigabytes once decompressed.
- divs-self-closing.html: 20,000 `<div/>` — a parser opens a div for each (the slash is ignored),
  the old nesting guard counted them as closed, and Readability took a minute of CPU on it.
- divs-stray-ends.html: 20,000 `<div></span>` — an end tag whose element is not open lowers
  nothing in a parser; the old guard lowered its depth on every end tag.

Run it from this folder: `python3 make.py`.
"""
import zlib


def pdf(objects):
    """A PDF with these object bodies (1-based), its xref table correct."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def stream(data, extra=b""):
    return b"<< /Length %d %s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
PAGES = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"


def xobject_self():
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /XObject << /X1 5 0 R >> /Font << /F1 6 0 R >> >> /Contents 4 0 R >>")
    content = stream(b"BT /F1 12 Tf 72 720 Td (A page that draws itself) Tj ET /X1 Do")
    form = stream(b"/X1 Do", b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                  b"/Resources << /XObject << /X1 5 0 R >> >>")
    return pdf([CATALOG, PAGES, page, content, form, FONT])


def deflate_bomb():
    text = b"BT /F1 12 Tf 72 720 Td (bomb) Tj ET\n" + b" " * (16 * 1024 * 1024)
    twice = zlib.compress(zlib.compress(text, 9), 9)
    refs = b" ".join([b"4 0 R"] * 1000)
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 5 0 R >> >> /Contents [" + refs + b"] >>")
    content = stream(twice, b"/Filter [/FlateDecode /FlateDecode]")
    return pdf([CATALOG, PAGES, page, content, FONT])


def page(body):
    return ("<!DOCTYPE html><html><head><title>Hostile</title></head><body>"
            "<p>Some words before the markup.</p>" + body + "</body></html>")


if __name__ == "__main__":
    with open("xobject-self.pdf", "wb") as f:
        f.write(xobject_self())
    with open("deflate-bomb.pdf", "wb") as f:
        f.write(deflate_bomb())
    with open("divs-self-closing.html", "w") as f:
        f.write(page("<div/>" * 20000))
    with open("divs-stray-ends.html", "w") as f:
        f.write(page("<div></span>" * 20000))
