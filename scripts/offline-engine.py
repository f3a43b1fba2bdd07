#!/usr/bin/env python3
"""A loopback fake of the sites behind examples/offline-engines.yml, for scripts/stack.sh without internet.

Usage: python3 scripts/offline-engine.py PORT

Answers `GET /<engine>/search?q=…` with the JSON SearXNG's `json_engine` reads there (`results_query: items`,
`url_query: link`, `title_query: name`, `content_query: snippet`): three results per engine and query, under
https://<engine>.example.test/, the same for the same query. `GET /healthz` answers OK. Standard library only;
each request is logged to stderr, so its log shows what reached the engines.
"""

import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESULTS = 3


class FakeEngine(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if url.path == "/healthz":
            self.reply(200, "text/plain", b"OK")
        elif len(parts) == 2 and parts[1] == "search":
            engine = parts[0]
            query = urllib.parse.parse_qs(url.query).get("q", [""])[0]
            slug = urllib.parse.quote(query.lower().replace(" ", "-"), safe="-")
            items = [
                {
                    "link": f"https://{engine}.example.test/{slug}/{rank}",
                    "name": f"{query} — result {rank} from {engine}",
                    "snippet": f"Made-up result {rank} of the offline engine {engine} for {query!r}.",
                }
                for rank in range(1, RESULTS + 1)
            ]
            self.reply(200, "application/json", json.dumps({"items": items}).encode())
        else:
            self.reply(404, "text/plain", b"not found")

    def reply(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: offline-engine.py PORT")
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), FakeEngine)
    server.daemon_threads = True
    print(f"offline-engine: serving on http://127.0.0.1:{server.server_port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
