"""exa-py, Exa's own Python SDK, with its `base_url` at the gateway's `/exa`: `search` (with its default
contents: each hit's page read as text, cut at `maxCharacters`), `search` without contents,
`search_and_contents`, `get_contents` (a page read and one that is not there, each with its status), the
inbound key as `x-api-key`, highlights (the passages that answer a query), and an option the gateway
cannot honour refused by name."""

import pytest
from exa_py import Exa

KEY = "tvly-searxng-gateway-test"


def client(base: str, key: str = "any") -> Exa:
    return Exa(api_key=key, base_url=f"{base}/exa")


def test_search_reads_each_hit_as_text(reading_gateway_url, site_url):
    response = client(reading_gateway_url).search("how the gateway reads pages", num_results=3)
    assert 1 <= len(response.results) <= 3
    for result in response.results:
        assert result.url.startswith(site_url)
        assert result.id == result.url
        # exa-py asks for {"text": {"maxCharacters": 10000}} by default: the article, cut there.
        assert result.text is not None and 2000 < len(result.text) <= 10_000, result.text[:200]
    assert response.resolved_search_type == "keyword"


def test_search_without_contents_lists_the_hits(reading_gateway_url):
    response = client(reading_gateway_url).search("listed only", num_results=2, contents=False)
    assert len(response.results) == 2
    assert all(result.text is None for result in response.results)
    assert all(result.title for result in response.results)


def test_search_and_contents_cuts_the_text(reading_gateway_url):
    response = client(reading_gateway_url).search_and_contents(
        "cut pages", num_results=2, text={"max_characters": 300}
    )
    assert len(response.results) == 2
    assert all(len(result.text) == 300 for result in response.results)


def test_get_contents_reads_pages_and_says_which_failed(reading_gateway_url, site_url):
    response = client(reading_gateway_url).get_contents(
        [f"{site_url}/exa-article", "http://10.1.2.3/private"], text=True
    )
    assert [result.url for result in response.results] == [f"{site_url}/exa-article"]
    assert len(response.results[0].text) > 2000
    statuses = {status.id: status for status in response.statuses}
    assert statuses[f"{site_url}/exa-article"].status == "success"
    refused = statuses["http://10.1.2.3/private"]
    assert refused.status == "error"
    assert refused.error.tag == "SOURCE_NOT_AVAILABLE"


def test_highlights_are_the_passages_that_answer_the_query(reading_gateway_url):
    # The pages are an Ars Technica article on a Minecraft server bug; exa-py asks for text beside
    # the highlights unless told not to.
    response = client(reading_gateway_url).search(
        "highlighted pages",
        num_results=2,
        contents={"highlights": {"query": "Mojang servers", "max_characters": 600}},
    )
    assert len(response.results) == 2
    for result in response.results:
        assert len(result.highlights) >= 1, result.highlights
        assert sum(len(h) for h in result.highlights) <= 600
        assert len(result.highlight_scores) == len(result.highlights)
        assert all(0.0 < score < 1.0 for score in result.highlight_scores), result.highlight_scores
        assert result.highlight_scores == sorted(result.highlight_scores, reverse=True)
        assert any("Mojang" in h or "server" in h for h in result.highlights), result.highlights
        assert result.text is None


def test_an_unknown_highlights_option_is_refused_by_name(reading_gateway_url):
    with pytest.raises(ValueError, match="highlights.model"):
        client(reading_gateway_url).search("passages", contents={"highlights": {"model": "x"}})


def test_the_key_rides_as_x_api_key(keyed_gateway_url):
    assert client(keyed_gateway_url, KEY).search("keyed exa", num_results=1, contents=False).results
    with pytest.raises(ValueError, match="401"):
        client(keyed_gateway_url, "wrong-key").search("keyed exa", contents=False)
