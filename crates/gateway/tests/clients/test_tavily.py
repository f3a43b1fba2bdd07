"""tavily-python's TavilyClient with api_base_url pointed at the gateway's Tavily API: results in
Tavily's shape, and the gateway's errors raised as tavily-python's own exceptions."""

import pytest
import requests
from conftest import urls
from tavily import TavilyClient
from tavily.errors import BadRequestError, InvalidAPIKeyError, UsageLimitExceededError

KEY = "tvly-searxng-gateway-test"


def client(base: str, api_key=KEY) -> TavilyClient:
    return TavilyClient(api_key=api_key, api_base_url=f"{base}/tavily")


def test_search_answers_tavilys_shape(gateway_url, direct_search):
    answer = client(gateway_url).search("tavily python", max_results=4, search_depth="advanced")
    assert answer["query"] == "tavily python"
    assert isinstance(answer["response_time"], float)
    results = answer["results"]
    assert urls(results) == urls(direct_search("tavily python")["results"][:4])
    assert [r["score"] for r in results] == [1.0, 0.5, 1 / 3, 0.25]
    for result in results:
        assert result["title"] and result["url"] and result["content"]


def test_topic_days_domains_are_honoured_and_the_harmless_options_taken(gateway_url):
    answer = client(gateway_url).search(
        "tavily options",
        search_depth="advanced",
        topic="news",
        days=3,
        max_results=10,
        include_domains=["example.org"],
        exclude_domains=["alpha.example.org"],
        include_answer=True,
        include_raw_content="markdown",
        include_images=False,
        include_favicon=False,
    )
    assert answer["answer"] is None, "the simulated SearXNG gives no direct answer"
    assert answer["images"] == []
    for url in urls(answer["results"]):
        assert ".example.org/" in url and "alpha.example.org" not in url


@pytest.mark.parametrize(
    "option, value",
    [("include_images", True), ("country", "germany"), ("chunks_per_source", 2), ("auto_parameters", True)],
)
def test_an_option_the_gateway_cannot_honour_raises_bad_request_error_naming_it(gateway_url, option, value):
    with pytest.raises(BadRequestError, match=option):
        client(gateway_url).search("tavily options", **{option: value})


def test_a_blank_query_raises_bad_request_error(gateway_url):
    with pytest.raises(BadRequestError, match="query is required"):
        client(gateway_url).search("   ")


def test_an_out_of_range_option_raises_bad_request_error(gateway_url):
    with pytest.raises(BadRequestError, match="max_results"):
        client(gateway_url).search("tavily", max_results=500)


def test_keyless_mode_raises_invalid_api_key_error(gateway_url, monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    keyless = client(gateway_url, api_key=None)
    with pytest.raises(InvalidAPIKeyError, match="missing or invalid API key"):
        keyless.search("no key")


def test_a_gateway_requiring_keys_serves_the_clients_key_and_refuses_another(keyed_gateway_url):
    answer = client(keyed_gateway_url).search("keyed tavily", max_results=3)
    assert len(answer["results"]) == 3
    with pytest.raises(InvalidAPIKeyError):
        client(keyed_gateway_url, api_key="tvly-not-a-client").search("wrong key")


def test_every_upstream_rate_limited_raises_usage_limit_exceeded_error(rate_limited_gateway_url):
    with pytest.raises(UsageLimitExceededError, match="searxng: rate_limited"):
        client(rate_limited_gateway_url).search("slow down")


def test_every_upstream_failing_raises_an_http_error_naming_them(failing_gateway_url):
    with pytest.raises(requests.HTTPError) as raised:
        client(failing_gateway_url).search("outage")
    assert raised.value.response.status_code == 502
    assert "searxng: server_error" in raised.value.response.json()["detail"]["error"]


def test_extract_reads_pages_and_reports_the_ones_it_could_not(reading_gateway_url, site_url, walled_site_url):
    article = f"{site_url}/2026/12/article"
    walled = f"{walled_site_url}/story"
    refused = "http://169.254.169.254/latest/meta-data/"
    answer = client(reading_gateway_url).extract([article, walled, refused], format="text")
    results = {r["url"]: r for r in answer["results"]}
    assert list(results) == [article, walled], "urls as sent, in order"
    assert "Minecraft" in results[article]["raw_content"], "the article's text"
    assert "read by the simulated jina reader" in results[walled]["raw_content"]
    assert answer["failed_results"] == [{"url": refused, "error": "the address is not one the gateway reads (forbidden_address)"}]
    assert isinstance(answer["response_time"], float)


def test_extract_of_one_url_in_markdown_with_images(reading_gateway_url, site_url):
    answer = client(reading_gateway_url).extract(f"{site_url}/one", include_images=True)
    [result] = answer["results"]
    assert result["url"] == f"{site_url}/one"
    assert "](" in result["raw_content"] or "#" in result["raw_content"], "Markdown"
    assert isinstance(result["images"], list)


def test_search_with_raw_content_reads_each_result(reading_gateway_url):
    answer = client(reading_gateway_url).search("async rust", max_results=3, include_raw_content=True)
    assert len(answer["results"]) == 3
    for result in answer["results"]:
        assert "Minecraft" in result["raw_content"], result["url"]
    text = client(reading_gateway_url).search("async rust", max_results=2, include_raw_content="text")
    for result in text["results"]:
        assert "](" not in result["raw_content"]


def test_extract_with_a_query_gives_the_best_chunks_joined_as_tavily_joins_them(reading_gateway_url, site_url):
    article = f"{site_url}/2026/12/article"
    whole = client(reading_gateway_url).extract(article)["results"][0]["raw_content"]
    answer = client(reading_gateway_url).extract(
        urls=[article], query="Which packets are used as attack vectors?", chunks_per_source=2
    )
    [result] = answer["results"]
    assert result["url"] == article
    chunks = result["raw_content"].split(" [...] ")
    assert 1 <= len(chunks) <= 2, chunks
    assert "Block Placement Packet" in result["raw_content"], result["raw_content"]
    assert len(result["raw_content"]) < len(whole) / 2, "chunks, not the page"
    one = client(reading_gateway_url).extract(article, query="attack vectors packets", chunks_per_source=1)
    [only] = one["results"]
    assert len(only["raw_content"]) <= 500 and " [...] " not in only["raw_content"]


@pytest.mark.parametrize("options", [{"chunks_per_source": 2}, {"query": "minecraft", "chunks_per_source": 9}])
def test_extract_chunks_per_source_out_of_range_or_without_a_query_raises_bad_request_error(
    reading_gateway_url, site_url, options
):
    with pytest.raises(BadRequestError, match="chunks_per_source"):
        client(reading_gateway_url).extract(f"{site_url}/one", **options)


def test_crawl_reads_the_start_page_and_its_links(reading_gateway_url, site_url):
    client = TavilyClient(api_key=KEY, api_base_url=f"{reading_gateway_url}/tavily")
    answer = client.crawl(f"{site_url}/tour/", max_depth=1, limit=10, allow_external=False, timeout=60)
    assert answer["base_url"] == f"{site_url}/tour/"
    urls = sorted(result["url"] for result in answer["results"])
    assert urls == [f"{site_url}/tour/", f"{site_url}/tour/a", f"{site_url}/tour/b"]
    assert all(result["raw_content"] for result in answer["results"])


def test_map_lists_the_urls_without_their_content(reading_gateway_url, site_url):
    client = TavilyClient(api_key=KEY, api_base_url=f"{reading_gateway_url}/tavily")
    answer = client.map(f"{site_url}/tour/", max_depth=1, select_paths=["/tour/a"], allow_external=False, timeout=60)
    assert answer["results"] == [f"{site_url}/tour/", f"{site_url}/tour/a"]


def test_crawl_instructions_are_refused_by_name(reading_gateway_url, site_url):
    client = TavilyClient(api_key=KEY, api_base_url=f"{reading_gateway_url}/tavily")
    with pytest.raises(BadRequestError, match="instructions"):
        client.crawl(f"{site_url}/tour/", instructions="only the docs", timeout=30)
