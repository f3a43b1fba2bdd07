"""gpt-researcher's custom retriever, its own module unmodified, with `RETRIEVER_ENDPOINT` at the gateway's
`/retriever`: the pages of a search read for it (`raw_content`), `RETRIEVER_ARG_MAX_RESULTS` honoured, the
inbound key as `RETRIEVER_ARG_API_KEY`, and a parameter the door does not take refused by name.

gpt-researcher is installed without its dependencies (an application's: LLM clients, document loaders);
the module the retriever is, `gpt_researcher/retrievers/custom/custom.py`, needs only `requests`, so it is
loaded from the installed package by its path, without running the package's `__init__`."""

import importlib.util
import pathlib

import requests

KEY = "tvly-searxng-gateway-test"


def custom_retriever():
    """The installed `CustomRetriever` class."""
    package = importlib.util.find_spec("gpt_researcher")
    assert package is not None, "gpt-researcher is installed (.ci/install-clients.sh)"
    path = pathlib.Path(package.submodule_search_locations[0]) / "retrievers" / "custom" / "custom.py"
    spec = importlib.util.spec_from_file_location("gpt_researcher_custom_retriever", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CustomRetriever


def endpoint(monkeypatch, base: str, **args: str) -> None:
    monkeypatch.setenv("RETRIEVER_ENDPOINT", f"{base}/retriever")
    for name, value in args.items():
        monkeypatch.setenv(f"RETRIEVER_ARG_{name.upper()}", value)


def test_the_search_comes_back_as_pages_read(monkeypatch, reading_gateway_url, site_url):
    endpoint(monkeypatch, reading_gateway_url, max_results="3")
    results = custom_retriever()("how the gateway reads pages").search()
    assert 1 <= len(results) <= 3, results
    for result in results:
        assert set(result) == {"url", "raw_content"}
        assert result["url"].startswith(site_url)
        # Each hit is the loopback site's article, read as text: far more than a snippet.
        assert len(result["raw_content"]) > 2000, result["raw_content"][:200]


def test_the_key_rides_as_a_retriever_argument(monkeypatch, keyed_gateway_url):
    endpoint(monkeypatch, keyed_gateway_url)
    # Without RETRIEVER_ARG_API_KEY the gateway refuses, and gpt-researcher carries on with nothing
    # (`None` in 0.15, `[]` in later releases).
    assert not custom_retriever()("keyed retriever").search()
    refused = requests.get(f"{keyed_gateway_url}/retriever", params={"query": "keyed retriever"}, timeout=30)
    assert refused.status_code == 401
    assert refused.json()["error"] == "unauthorized"
    # A wrong key is refused the same way; the right one is admitted (an unknown parameter, here, so
    # that nothing is searched or read: what is checked is the key).
    wrong = requests.get(
        f"{keyed_gateway_url}/retriever", params={"query": "q", "api_key": "wrong"}, timeout=30
    )
    assert wrong.status_code == 401
    admitted = requests.get(
        f"{keyed_gateway_url}/retriever", params={"query": "q", "api_key": KEY, "depth": "x"}, timeout=30
    )
    assert admitted.status_code == 400, admitted.text


def test_a_parameter_the_door_does_not_take_is_refused_by_name(monkeypatch, reading_gateway_url):
    endpoint(monkeypatch, reading_gateway_url, search_depth="advanced")
    assert not custom_retriever()("unsupported").search()
    answer = requests.get(
        f"{reading_gateway_url}/retriever", params={"query": "unsupported", "search_depth": "advanced"}, timeout=30
    )
    assert answer.status_code == 400
    body = answer.json()
    assert body["error"] == "unsupported_parameter"
    assert "search_depth" in body["message"]
