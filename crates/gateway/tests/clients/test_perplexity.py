"""The perplexityai SDK, unmodified, with `base_url` pointed at the gateway's Perplexity door:
`search.create` with one query and with several, its filters, `max_tokens_per_page` reading the
pages, and the gateway's errors raised as the SDK's own exceptions."""

import pytest
from conftest import urls
from perplexity import AuthenticationError, BadRequestError, InternalServerError, Perplexity, RateLimitError

KEY = "tvly-searxng-gateway-test"


def client(base: str, api_key=KEY) -> Perplexity:
    return Perplexity(api_key=api_key, base_url=f"{base}/perplexity", max_retries=0)


def test_one_query_gives_the_gateways_results(gateway_url, direct_search):
    answer = client(gateway_url).search.create(query="perplexity python", max_results=4)
    assert answer.id
    assert [r.url for r in answer.results] == urls(direct_search("perplexity python")["results"][:4])
    for result in answer.results:
        assert result.title and result.snippet


def test_several_queries_give_one_list_each_in_order(gateway_url, direct_search):
    answer = client(gateway_url).search.create(query=["first perplexity", "second perplexity"], max_results=2)
    assert len(answer.results) == 2
    for query, results in zip(["first perplexity", "second perplexity"], answer.results):
        assert [r.url for r in results] == urls(direct_search(query)["results"][:2])


def test_the_domain_filter_and_recency_are_applied(gateway_url):
    answer = client(gateway_url).search.create(
        query="perplexity filters",
        max_results=20,
        search_domain_filter=["-shared.example.com"],
        search_recency_filter="week",
        country="US",
    )
    assert answer.results
    assert all("shared.example.com" not in r.url for r in answer.results)


def test_max_tokens_per_page_reads_the_pages(reading_gateway_url):
    answer = client(reading_gateway_url).search.create(query="perplexity pages", max_results=2, max_tokens_per_page=64)
    assert len(answer.results) == 2
    for result in answer.results:
        # 64 tokens of o200k: a few hundred characters of English at most
        assert 0 < len(result.snippet) <= 64 * 6
        assert "Snippet of" not in result.snippet


def test_a_wrong_key_raises_authentication_error(keyed_gateway_url):
    assert len(client(keyed_gateway_url).search.create(query="keyed perplexity", max_results=2).results) == 2
    with pytest.raises(AuthenticationError):
        client(keyed_gateway_url, api_key="pplx-not-a-client").search.create(query="wrong key")


def test_an_out_of_range_option_raises_bad_request(gateway_url):
    with pytest.raises(BadRequestError, match="max_results"):
        client(gateway_url).search.create(query="perplexity", max_results=50)


def test_upstream_failures_raise_the_sdks_errors(failing_gateway_url, rate_limited_gateway_url):
    with pytest.raises(InternalServerError, match="searxng: server_error"):
        client(failing_gateway_url).search.create(query="outage")
    with pytest.raises(RateLimitError, match="rate_limited"):
        client(rate_limited_gateway_url).search.create(query="slow down")


def test_the_sdk_does_not_retry_an_outage(failing_gateway_url):
    """The gateway says `x-should-retry: false`: even the SDK's default retries stay off."""
    patient = Perplexity(api_key=KEY, base_url=f"{failing_gateway_url}/perplexity")
    response = patient.search.with_raw_response
    with pytest.raises(InternalServerError) as raised:
        response.create(query="outage again")
    assert raised.value.response.headers["x-should-retry"] == "false"
