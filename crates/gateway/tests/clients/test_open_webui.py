"""Open WebUI's own web searches, imported from the open-webui package (installed with --no-deps plus the
modules their import chain needs) and called as Open WebUI calls them: its SearXNG search
(open_webui.retrieval.web.searxng.search_searxng) with the query URL an admin would set to reach the
gateway, and its Tavily search with TAVILY_API_BASE_URL set to the gateway's Tavily API."""

import asyncio
import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Open WebUI reads its configuration when imported: a throwaway data directory (it migrates a SQLite
# database there), a secret, a static-asset source (the wheel has no built frontend), and a vector
# database that needs no client library at import time.
_HOME = Path(tempfile.mkdtemp(prefix="open-webui-"))
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
(_HOME / "frontend" / "static").mkdir(parents=True)
(_HOME / "data").mkdir()
os.environ.update(
    {
        "DATA_DIR": str(_HOME / "data"),
        "WEBUI_SECRET_KEY": "searxng-gateway-tests",
        "FRONTEND_BUILD_DIR": str(_HOME / "frontend"),
        "VECTOR_DB": "qdrant",
        "TAVILY_API_BASE_URL": os.environ.get("GATEWAY_URL", "") + "/tavily",
    }
)

from conftest import urls  # noqa: E402
from open_webui.retrieval.web.searxng import search_searxng  # noqa: E402
from open_webui.retrieval.web.tavily import search_tavily  # noqa: E402
from open_webui.utils.session_pool import close_session  # noqa: E402


def search(query_url: str, query: str, count: int, **kwargs):
    async def run():
        try:
            return await search_searxng(query_url, query, count, **kwargs)
        finally:
            await close_session()

    return asyncio.run(run())


def by_score(results):
    """Open WebUI sorts SearXNG's results by score, highest first."""
    return sorted(results, key=lambda r: r.get("score", 0), reverse=True)


def test_the_search_url_gives_the_gateways_results_by_score(gateway_url, direct_search):
    results = search(f"{gateway_url}/search", "open webui", 5)
    expected = by_score(direct_search("open webui", language="all", safesearch="1", pageno="1")["results"])[:5]
    assert [r.link for r in results] == urls(expected)
    for result in results:
        assert result.title and result.snippet


def test_the_legacy_query_placeholder_url_works_too(gateway_url):
    results = search(f"{gateway_url}/search?q=<query>", "open webui legacy", 3)
    assert len(results) == 3


def test_the_bare_origin_works_through_the_root_path_redirect(gateway_url):
    results = search(gateway_url, "open webui root", 4)
    assert len(results) == 4


def test_language_time_range_and_categories_are_accepted(gateway_url):
    results = search(
        f"{gateway_url}/search",
        "open webui options",
        3,
        language="de",
        time_range="week",
        safesearch="2",
        categories=["general"],
    )
    assert len(results) == 3


def test_a_domain_filter_list_applies_to_the_gateways_results(gateway_url):
    results = search(f"{gateway_url}/search", "open webui filtered", 10, filter_list=["example.org"])
    assert results, "the simulated engines return example.org results"
    assert all(".example.org/" in r.link for r in results)


def test_open_webuis_tavily_search_works_with_the_gateway_as_tavily_api_base_url(gateway_url, direct_search):
    results = search_tavily("tvly-open-webui", "open webui tavily", 3)
    assert [r.link for r in results] == urls(direct_search("open webui tavily")["results"][:3])


# Open WebUI's "external" engines, pointed at the gateway's Open WebUI door, and its Perplexity search
# with a custom URL (PERPLEXITY_SEARCH_API_URL) pointed at the gateway's Perplexity door. Open WebUI
# swallows every error of these (logging it) and carries on without results: the tests read what
# they return.

from types import SimpleNamespace  # noqa: E402

import pytest  # noqa: E402
import requests  # noqa: E402
from open_webui.retrieval.loaders.external_web import ExternalWebLoader  # noqa: E402
from open_webui.retrieval.web.external import search_external  # noqa: E402
from open_webui.retrieval.web.perplexity_search import search_perplexity_search  # noqa: E402

KEY = "tvly-searxng-gateway-test"
USER = SimpleNamespace(id="owui-user-7", name="Ada Lövelace", email="ada@example.org", role="user")
# What Open WebUI's router passes: a request with a state (the chat, when there is one).
REQUEST = SimpleNamespace(state=SimpleNamespace(chat_id="chat-1"))


def test_external_search_gives_the_gateways_results(gateway_url, direct_search):
    results = search_external(REQUEST, f"{gateway_url}/openwebui/search", KEY, "open webui external", 3, None, user=USER)
    assert [r.link for r in results] == urls(direct_search("open webui external")["results"][:3])
    for result in results:
        assert result.title and result.snippet


def test_external_search_users_are_sub_clients_of_the_key(keyed_gateway_url, admin_token):
    results = search_external(
        REQUEST, f"{keyed_gateway_url}/openwebui/search", KEY, "open webui users", 2, None, user=USER
    )
    assert len(results) == 2
    status = requests.get(
        f"{keyed_gateway_url}/admin/status", headers={"Authorization": f"Bearer {admin_token}"}, timeout=30
    ).json()
    [row] = [c for c in status["clients"] if c["client"] == "python/owui-user-7"]
    assert row["parent"] == "python"
    assert row["end_user"] == {"user": "owui-user-7", "name": "Ada Lövelace", "role": "user"}
    metrics = requests.get(f"{keyed_gateway_url}/metrics", timeout=30).text
    assert 'client="python/owui-user-7"' in metrics
    assert "ada@example.org" not in metrics
    wrong = search_external(REQUEST, f"{keyed_gateway_url}/openwebui/search", "wrong-key", "no", 2, None, user=USER)
    assert wrong == [], "a wrong key is refused (Open WebUI logs it and has no results)"


def test_perplexity_search_with_a_custom_url(gateway_url, direct_search):
    results = search_perplexity_search(KEY, "open webui perplexity", 4, None, f"{gateway_url}/perplexity/search", USER)
    assert [r.link for r in results] == urls(direct_search("open webui perplexity")["results"][:4])


def test_external_web_loader_reads_the_pages(reading_gateway_url, site_url):
    pages = [f"{site_url}/loader/one", f"{site_url}/loader/two"]
    documents = ExternalWebLoader(pages, f"{reading_gateway_url}/openwebui/loader", KEY).load()
    assert [d.metadata["source"] for d in documents] == pages
    for document in documents:
        assert "Minecraft" in document.page_content
        assert document.metadata["title"]


def test_perplexity_search_and_the_loader_with_keys_required(keyed_gateway_url, site_url):
    url = f"{keyed_gateway_url}/perplexity/search"
    assert len(search_perplexity_search(KEY, "keyed perplexity", 2, None, url, USER)) == 2
    assert search_perplexity_search("wrong-key", "keyed perplexity", 2, None, url, USER) == []
    loader = f"{keyed_gateway_url}/openwebui/loader"
    # The keyed gateway reads no loopback site (the default address policy), so the right key gets an empty
    # answer — not an error — and a wrong one the 401 Open WebUI raises when told not to carry on.
    assert ExternalWebLoader([f"{site_url}/keyed"], loader, KEY, continue_on_failure=False).load() == []
    with pytest.raises(requests.HTTPError) as raised:
        ExternalWebLoader([f"{site_url}/keyed"], loader, "wrong-key", continue_on_failure=False).load()
    assert raised.value.response.status_code == 401
