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
