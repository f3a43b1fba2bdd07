"""LangChain's SearxSearchWrapper (langchain-community), configured as its documentation says:
searx_host is the gateway's origin. It sends GET /?q=…&format=json, which the gateway redirects to
/search as SearXNG does, and the wrapper follows."""

import asyncio

from conftest import urls
from langchain_community.utilities import SearxSearchWrapper


def test_run_returns_the_snippets_of_the_first_results(gateway_url, direct_search):
    search = SearxSearchWrapper(searx_host=gateway_url)
    text = search.run("langchain run")
    expected = direct_search("langchain run", language="en")["results"]
    assert text == "\n\n".join(r["content"] for r in expected[: search.k])


def test_results_returns_titles_links_and_engines(gateway_url, direct_search):
    search = SearxSearchWrapper(searx_host=gateway_url)
    results = search.results("langchain results", num_results=4)
    expected = direct_search("langchain results", language="en")["results"][:4]
    assert urls(results) == urls(expected)
    for result in results:
        assert result["title"] and result["snippet"] and result["engines"]


def test_results_pass_categories_through(gateway_url):
    search = SearxSearchWrapper(searx_host=gateway_url)
    results = search.results("langchain news", num_results=3, categories=["general"])
    assert len(results) == 3


def test_aresults_over_aiohttp_gives_the_same_results(gateway_url, direct_search):
    search = SearxSearchWrapper(searx_host=gateway_url)
    results = asyncio.run(search.aresults("langchain async", num_results=5))
    expected = direct_search("langchain async", language="en")["results"][:5]
    assert urls(results) == urls(expected)


def test_a_search_every_upstream_failed_raises_the_wrappers_error(failing_gateway_url):
    search = SearxSearchWrapper(searx_host=failing_gateway_url)
    try:
        search.run("nothing answers")
    except ValueError as error:
        assert "Searx API returned an error" in str(error)
        assert "all_upstreams_failed" in str(error)
    else:
        raise AssertionError("a 502 is an error for the wrapper")
