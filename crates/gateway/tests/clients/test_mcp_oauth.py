"""The MCP Python SDK's OAuth client (`OAuthClientProvider`) against the gateway as its own authorization
server: discovery from the 401, dynamic registration, the authorization code with PKCE through the consent
page (submitted here as a person would, with their gateway API key), the token, a tool call, a refresh, and
refusal once the key is removed from the keys file.

tests/integration/real_clients.rs starts the gateway binary for this file with MCP_OAUTH on and tells it
through the environment: OAUTH_GATEWAY_URL (also its PUBLIC_URL), OAUTH_KEY (the key of client `person` in
its keys file), OAUTH_KEYS_FILE (the file), OAUTH_OTHER_KEYS_LINE (a keys-file line for another client, to
replace it with) and OAUTH_GATEWAY_PID (to send SIGHUP to)."""

import asyncio
import html.parser
import os
import signal
import time
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
import pytest

# Generous: the suite runs many gateways at once on two cores.
TIMEOUT = 30


def _post(*args, **kwargs):
    return httpx2.post(*args, timeout=TIMEOUT, **kwargs)


def _get(*args, **kwargs):
    return httpx2.get(*args, timeout=TIMEOUT, **kwargs)
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:33418/callback"


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this through `cargo test --test integration real_clients`")
    return value


class Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


class Form(html.parser.HTMLParser):
    """The consent page's form: its action and hidden fields."""

    def __init__(self):
        super().__init__()
        self.action = None
        self.fields = {}
        self.client_name = None
        self._in_name = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.action = attrs.get("action")
        if tag == "input" and attrs.get("type") == "hidden":
            self.fields[attrs["name"]] = attrs.get("value", "")
        if tag == "span" and attrs.get("id") == "client-name":
            self._in_name = True

    def handle_data(self, data):
        if self._in_name:
            self.client_name = data
            self._in_name = False


class Person:
    """What a person does in the browser: open the authorization URL, read the consent page, sign in with
    their key and allow; the gateway's redirect to the client's callback carries the code."""

    def __init__(self, key: str):
        self.key = key
        self.result: AuthorizationCodeResult | None = None
        self.page_names_client = None

    async def redirect_handler(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=TIMEOUT) as http:
            page = await http.get(authorization_url)
            assert page.status_code == 200, page.text
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
            form = Form()
            form.feed(page.text)
            self.page_names_client = form.client_name
            wrong = await http.post(
                urljoin(authorization_url, form.action), data={**form.fields, "api_key": "not-a-key", "decision": "allow"}
            )
            assert wrong.status_code == 401 and "not one of this gateway" in wrong.text
            answer = await http.post(
                urljoin(authorization_url, form.action), data={**form.fields, "api_key": self.key, "decision": "allow"}
            )
            assert answer.status_code == 303, answer.text
            location = answer.headers["location"]
            assert location.startswith(REDIRECT)
            query = parse_qs(urlparse(location).query)
            self.result = AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def provider(url: str, storage: Memory, person: Person) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=f"{url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="pytest <b>assistant</b>",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
    )


async def search(url: str, auth: OAuthClientProvider, query: str):
    async with httpx2.AsyncClient(auth=auth, timeout=TIMEOUT) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("web_search", {"query": query, "max_results": 2})


def test_a_client_without_a_token_is_pointed_at_the_resource_metadata():
    url = _env("OAUTH_GATEWAY_URL")
    answer = _post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{url}/.well-known/oauth-protected-resource/mcp"' in challenge
    metadata = _get(f"{url}/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == f"{url}/mcp"
    assert metadata["authorization_servers"] == [url]


def test_the_sdks_oauth_client_signs_in_calls_refreshes_and_is_refused_once_the_key_is_removed():
    url = _env("OAUTH_GATEWAY_URL")
    storage = Memory()
    person = Person(_env("OAUTH_KEY"))
    auth = provider(url, storage, person)

    result = asyncio.run(search(url, auth, "oauth first"))
    assert not result.is_error, result.content
    assert result.structured_content["results"]
    # The client's own name is on the page as text, not markup.
    assert person.page_names_client == "pytest <b>assistant</b>"
    assert storage.client is not None and storage.client.client_id.startswith("sgw_client_")
    first = storage.tokens
    assert first.access_token.startswith("sgw_at_") and first.refresh_token.startswith("sgw_rt_")

    # The access token has run out (as far as the client knows): the SDK refreshes before the call.
    auth.context.token_expiry_time = time.time() - 1
    result = asyncio.run(search(url, auth, "oauth refreshed"))
    assert not result.is_error, result.content
    second = storage.tokens
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token
    # The refresh token is single use.
    reused = _post(
        f"{url}/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": first.refresh_token, "client_id": storage.client.client_id},
    )
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"

    # The operator removes the person's key and reloads: the tokens made with it stop working.
    with open(_env("OAUTH_KEYS_FILE"), "w") as keys:
        keys.write(_env("OAUTH_OTHER_KEYS_LINE") + "\n")
    os.kill(int(_env("OAUTH_GATEWAY_PID")), signal.SIGHUP)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream", "authorization": f"Bearer {second.access_token}"}
    deadline = time.monotonic() + 20
    status = None
    while time.monotonic() < deadline:
        status = _post(f"{url}/mcp", json=listing, headers=headers).status_code
        if status == 401:
            break
        time.sleep(0.1)
    assert status == 401, "the access token still works after its key was removed"
    refused = _post(
        f"{url}/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": second.refresh_token, "client_id": storage.client.client_id},
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
