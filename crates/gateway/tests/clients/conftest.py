"""The real client libraries against the gateway, each pointed at it by nothing but its base URL.

tests/integration/real_clients.rs runs these with pytest from the virtualenv .ci/install-clients.sh builds,
against gateways it started on loopback in front of the simulated SearXNG and premium APIs, and tells
them where through the environment:

- GATEWAY_URL: a healthy gateway (simulated SearXNG, Brave as fallback);
- FAILING_GATEWAY_URL: a gateway whose only upstream, SearXNG, answers 500;
- RATE_LIMITED_GATEWAY_URL: a gateway whose only upstream, SearXNG, answers 429;
- KEYED_GATEWAY_URL: a healthy gateway that requires an inbound key (its API_KEYS_FILE names the key
  the tests use, `tvly-searxng-gateway-test`, as client `python`), trusts Open WebUI's user headers
  (OPENWEBUI_USER_HEADER_TRUST) and has an ADMIN_TOKEN;
- READING_GATEWAY_URL, SITE_URL and WALLED_SITE_URL: a gateway that reads pages, the loopback site it
  reads (every path a real article; the gateway's SearXNG results point at it), and a site whose
  every path is a Cloudflare challenge (the gateway's premium reader, a simulated Jina Reader, reads
  those instead);
- GATEWAY_BIN and SEARXNG_URL: the binary, and the simulated SearXNG for `searxng-gateway mcp`.
"""

import os

import pytest
import requests


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these through `cargo test --test integration real_clients`")
    return value


@pytest.fixture
def gateway_url() -> str:
    return _env("GATEWAY_URL")


@pytest.fixture
def failing_gateway_url() -> str:
    return _env("FAILING_GATEWAY_URL")


@pytest.fixture
def rate_limited_gateway_url() -> str:
    return _env("RATE_LIMITED_GATEWAY_URL")


@pytest.fixture
def keyed_gateway_url() -> str:
    return _env("KEYED_GATEWAY_URL")


@pytest.fixture
def admin_token() -> str:
    return _env("ADMIN_TOKEN")


@pytest.fixture
def reading_gateway_url() -> str:
    return _env("READING_GATEWAY_URL")


@pytest.fixture
def site_url() -> str:
    return _env("SITE_URL")


@pytest.fixture
def walled_site_url() -> str:
    return _env("WALLED_SITE_URL")


@pytest.fixture
def gateway_bin() -> str:
    return _env("GATEWAY_BIN")


@pytest.fixture
def searxng_url() -> str:
    return _env("SEARXNG_URL")


@pytest.fixture
def direct_search(gateway_url):
    """The gateway's own /search answer for a query: what every client should end up showing."""

    def search(query: str, **params) -> dict:
        response = requests.get(f"{gateway_url}/search", params={"q": query, "format": "json", **params}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    return search


def urls(results) -> list:
    """The URLs of a list of result dicts, whatever the client calls the field."""
    return [r.get("url") or r.get("link") for r in results]
