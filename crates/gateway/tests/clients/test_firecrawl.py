"""firecrawl-py, unmodified, pointed at the gateway by its API URL alone: the v2 client (`Firecrawl`,
whose synchronous calls go to the URL's origin: the gateway serves `/v2/search` and `/v2/scrape` at
the root as well as under `/firecrawl`) and the v1 client (`V1FirecrawlApp`, which keeps the path),
their search and scrape answers, and the gateway's errors raised as firecrawl-py's own exceptions."""

import pytest
import requests
from conftest import urls
from firecrawl import (
    BadRequestError,
    Firecrawl,
    InternalServerError,
    UnauthorizedError,
    V1FirecrawlApp,
    WebsiteNotSupportedError,
)
from firecrawl.v2.types import Document

KEY = "tvly-searxng-gateway-test"


def v2(base: str, api_key=KEY) -> Firecrawl:
    return Firecrawl(api_key=api_key, api_url=f"{base}/firecrawl", max_retries=1)


def v1(base: str, api_key=KEY) -> V1FirecrawlApp:
    return V1FirecrawlApp(api_key=api_key, api_url=f"{base}/firecrawl")


def test_v2_search_gives_the_gateways_results(gateway_url, direct_search):
    found = v2(gateway_url).search("firecrawl python", limit=3)
    assert urls([{"url": r.url} for r in found.web]) == urls(direct_search("firecrawl python")["results"][:3])
    for position, result in enumerate(found.web, start=1):
        assert result.title and result.description
        assert result.position == position


def test_v2_search_keeps_the_domains_asked_for_and_answers_each_source(gateway_url):
    found = v2(gateway_url).search(
        "firecrawl domains", sources=["web", "news"], include_domains=["shared.example.com"], tbs="qdr:m"
    )
    assert found.web, "web results"
    assert all("shared.example.com" in r.url for r in found.web), [r.url for r in found.web]
    assert found.news is not None


def test_v2_search_with_scrape_options_reads_each_result(reading_gateway_url):
    from firecrawl.v2.types import ScrapeOptions

    found = v2(reading_gateway_url).search("read each", limit=2, scrape_options=ScrapeOptions(formats=["markdown"]))
    assert len(found.web) == 2
    for document in found.web:
        assert isinstance(document, Document)
        assert "Minecraft" in document.markdown
        assert document.metadata.source_url.startswith("http")


def test_v2_scrape_gives_markdown_html_links_and_metadata(reading_gateway_url, site_url):
    page = f"{site_url}/2026/12/firecrawl"
    document = v2(reading_gateway_url).scrape(page, formats=["markdown", "html", "links"], only_main_content=True)
    assert "Minecraft" in document.markdown
    assert "<p" in document.html
    assert document.links and all(link.startswith("http") for link in document.links)
    assert document.metadata.source_url == page
    assert document.metadata.status_code == 200
    assert document.metadata.title


def test_v2_scrape_of_a_private_address_raises_website_not_supported(reading_gateway_url):
    with pytest.raises(WebsiteNotSupportedError):
        v2(reading_gateway_url).scrape("http://169.254.169.254/latest/meta-data/")


def test_v2_an_option_the_gateway_cannot_give_raises_bad_request(gateway_url):
    with pytest.raises(BadRequestError, match="categories"):
        v2(gateway_url).search("firecrawl categories", categories=["github"])


def test_v2_every_upstream_failing_raises_internal_server_error(failing_gateway_url):
    with pytest.raises(InternalServerError, match="searxng: server_error"):
        v2(failing_gateway_url).search("outage")


def test_v2_a_gateway_requiring_keys_serves_the_key_and_refuses_another(keyed_gateway_url):
    assert len(v2(keyed_gateway_url).search("keyed firecrawl", limit=2).web) == 2
    with pytest.raises(UnauthorizedError):
        v2(keyed_gateway_url, api_key="fc-not-a-client").search("wrong key")


def test_v1_search_and_scrape(gateway_url, reading_gateway_url, site_url, direct_search):
    answer = v1(gateway_url).search("firecrawl v1", limit=4)
    assert answer.success
    assert urls(answer.data) == urls(direct_search("firecrawl v1", language="en-US")["results"][:4])
    page = v1(reading_gateway_url).scrape_url(f"{site_url}/v1", formats=["markdown"])
    assert "Minecraft" in page.markdown
    assert page.metadata["sourceURL"] == f"{site_url}/v1"


def test_v1_a_wrong_key_is_an_http_error_401(keyed_gateway_url):
    with pytest.raises(requests.HTTPError) as raised:
        v1(keyed_gateway_url, api_key="fc-not-a-client").search("wrong key")
    assert raised.value.response.status_code == 401


def test_v2_map_lists_the_sites_sitemap_and_links_that_robots_allows(reading_gateway_url, site_url):
    mapped = v2(reading_gateway_url).map(f"{site_url}/", limit=50)
    found = [link.url for link in mapped.links]
    assert f"{site_url}/guide/mapping" in found and f"{site_url}/guide/crawling" in found
    assert not any("/private" in url for url in found)
    only = v2(reading_gateway_url).map(f"{site_url}/", sitemap="only", search="crawling", limit=1)
    assert [link.url for link in only.links] == [f"{site_url}/guide/crawling"]


def test_v1_map_url_gives_links_as_strings(reading_gateway_url, site_url):
    answer = v1(reading_gateway_url).map_url(f"{site_url}/", sitemap_only=True, use_index=False)
    assert f"{site_url}/guide/mapping" in answer.links


def test_v2_crawl_waits_for_the_job_and_gives_its_pages(reading_gateway_url, site_url):
    job = v2(reading_gateway_url).crawl(f"{site_url}/", limit=10, poll_interval=1, formats=["markdown"])
    assert job.status == "completed"
    found = [doc.metadata.source_url for doc in job.data]
    # The sitemap's pages and the start page; the start page's navigation fills the rest of the limit.
    assert {f"{site_url}/", f"{site_url}/guide/crawling", f"{site_url}/guide/mapping"} <= set(found)
    assert len(found) == len(set(found)) <= 10
    assert all(url.startswith(site_url) and "/private" not in url for url in found)
    assert all(doc.markdown for doc in job.data)
    # The sitemap's /private/notes is disallowed by robots.txt: never read.
    errors = v2(reading_gateway_url).get_crawl_errors(job.id)
    assert errors.errors == []


def test_v2_batch_scrape_reads_each_page(reading_gateway_url, site_url):
    pages = [f"{site_url}/batch/one", f"{site_url}/batch/two"]
    job = v2(reading_gateway_url).batch_scrape(pages, formats=["markdown"], poll_interval=1)
    assert job.status == "completed"
    assert sorted(doc.metadata.source_url for doc in job.data) == pages


def test_v2_start_crawl_and_cancel(reading_gateway_url, site_url):
    client = v2(reading_gateway_url)
    started = client.start_crawl(f"{site_url}/", limit=5, delay=30, max_concurrency=1)
    assert client.cancel_crawl(started.id) is True
    assert client.get_crawl_status(started.id).status == "cancelled"
