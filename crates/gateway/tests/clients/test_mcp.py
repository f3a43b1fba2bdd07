"""The MCP Python SDK's own clients: Streamable HTTP against the gateway's /mcp, and stdio launching
`searxng-gateway mcp` as an MCP client configured with a command would. The SDK validates every
structured result against the tool's output schema."""

import asyncio

from conftest import urls
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def over_http(url: str, calls):
    async with streamable_http_client(f"{url}/mcp") as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await calls(session)


def test_the_http_client_lists_web_search_with_its_schemas(gateway_url):
    async def calls(session):
        return (await session.list_tools()).tools

    tools = asyncio.run(over_http(gateway_url, calls))
    assert [t.name for t in tools] == ["web_search", "web_fetch", "web_research", "web_map", "web_crawl"]
    tool = tools[0]
    assert tool.input_schema["required"] == ["query"]
    assert "max_results" in tool.input_schema["properties"]
    assert "results" in tool.output_schema["properties"]


def test_web_search_over_http_returns_structured_results_and_text(gateway_url, direct_search):
    async def calls(session):
        await session.list_tools()
        return await session.call_tool("web_search", {"query": "mcp python", "max_results": 3})

    result = asyncio.run(over_http(gateway_url, calls))
    assert not result.is_error
    structured = result.structured_content
    assert urls(structured["results"]) == urls(direct_search("mcp python")["results"][:3])
    for item in structured["results"]:
        assert item["title"] and item["url"] and item["content"] and item["engines"]
    text = result.content[0].text
    assert '3 results for "mcp python"' in text
    assert structured["results"][0]["url"] in text


def test_a_blank_query_is_a_tool_error_the_model_can_read(gateway_url):
    async def calls(session):
        return await session.call_tool("web_search", {"query": " "})

    result = asyncio.run(over_http(gateway_url, calls))
    assert result.is_error
    assert "query is required" in result.content[0].text


def test_every_upstream_failing_is_a_tool_error_naming_them(failing_gateway_url):
    async def calls(session):
        return await session.call_tool("web_search", {"query": "outage"})

    result = asyncio.run(over_http(failing_gateway_url, calls))
    assert result.is_error
    assert "searxng: server_error" in result.content[0].text


def test_the_stdio_client_launches_searxng_gateway_mcp(gateway_bin, searxng_url):
    server = StdioServerParameters(
        command=gateway_bin,
        args=["mcp"],
        env={"SEARXNG_BACKEND_URL": searxng_url, "LOG_LEVEL": "debug"},
    )

    async def run():
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                result = await session.call_tool("web_search", {"query": "mcp over stdio", "max_results": 2})
                return tools, result

    tools, result = asyncio.run(run())
    assert [t.name for t in tools] == ["web_search", "web_fetch", "web_research", "web_map", "web_crawl"]
    assert not result.is_error
    assert len(result.structured_content["results"]) == 2


def test_web_fetch_reads_a_page_a_window_at_a_time(reading_gateway_url, site_url):
    page = f"{site_url}/articles/async-rust"

    async def calls(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        first = await session.call_tool("web_fetch", {"url": page, "format": "text", "max_length": 500})
        rest = await session.call_tool(
            "web_fetch",
            {"url": page, "format": "text", "max_length": 1_000_000, "start_index": first.structured_content["next_start_index"]},
        )
        return tools["web_fetch"], first, rest

    tool, first, rest = asyncio.run(over_http(reading_gateway_url, calls))
    assert tool.input_schema["required"] == ["url"]
    assert "next_start_index" in tool.output_schema["properties"]
    assert not first.is_error
    window = first.structured_content
    assert window["url"] == page and window["title"]
    assert len(window["content"]) == 500
    assert window["next_start_index"] == 500
    assert window["total_length"] > 500
    assert "start_index=500" in first.content[0].text
    assert rest.structured_content["content"]
    assert "next_start_index" not in rest.structured_content
    assert len(window["content"]) + len(rest.structured_content["content"]) == window["total_length"]


def test_web_fetch_of_a_refused_address_is_a_tool_error(reading_gateway_url):
    async def calls(session):
        return await session.call_tool("web_fetch", {"url": "http://169.254.169.254/latest/meta-data/"})

    result = asyncio.run(over_http(reading_gateway_url, calls))
    assert result.is_error
    assert "not one the gateway reads" in result.content[0].text


def test_web_fetch_with_a_query_returns_the_passages_that_answer_it(reading_gateway_url, site_url):
    page = f"{site_url}/articles/minecraft-bug"

    async def calls(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        whole = await session.call_tool("web_fetch", {"url": page, "format": "text"})
        asked = await session.call_tool(
            "web_fetch", {"url": page, "query": "How small does zlib compress the payload?", "max_tokens": 300}
        )
        return tools["web_fetch"], whole, asked

    tool, whole, asked = asyncio.run(over_http(reading_gateway_url, calls))
    assert {"query", "max_tokens"} <= set(tool.input_schema["properties"])
    assert whole.structured_content["content"].find("39 kilobytes") > 1500
    assert not asked.is_error, asked.content[0].text
    structured = asked.structured_content
    assert "39 kilobytes" in asked.content[0].text
    assert 0 < structured["tokens"] <= 300
    assert structured["passages"] and all(isinstance(p["heading_path"], list) for p in structured["passages"])
    assert len(structured["content"]) < len(whole.structured_content["content"])


def test_web_research_returns_passages_of_the_top_results_with_their_urls(reading_gateway_url, site_url):
    query = "minecraft zlib payload kilobytes"

    async def calls(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        searched = await session.call_tool("web_search", {"query": query, "max_results": 2})
        research = await session.call_tool("web_research", {"query": query, "max_results": 2, "max_tokens": 500})
        unknown = await session.call_tool("web_research", {"query": query, "depth": "deep"})
        return tools["web_research"], searched, research, unknown

    tool, searched, research, unknown = asyncio.run(over_http(reading_gateway_url, calls))
    assert tool.input_schema["required"] == ["query"]
    assert {"max_results", "max_tokens"} <= set(tool.input_schema["properties"])
    assert "passages" in tool.output_schema["properties"]
    assert not research.is_error, research.content[0].text
    structured = research.structured_content
    assert 0 < structured["tokens"] <= 500
    assert structured["failed"] == []
    passages = structured["passages"]
    assert passages
    assert {p["url"] for p in passages} <= set(urls(searched.structured_content["results"]))
    for p in passages:
        assert p["url"].startswith(site_url) and p["title"] and p["text"]
    assert "39 kilobytes" in research.content[0].text
    assert unknown.is_error
    assert "depth" in unknown.content[0].text


def test_web_map_and_web_crawl_read_a_site(reading_gateway_url, site_url):
    async def calls(session):
        mapped = await session.call_tool("web_map", {"url": f"{site_url}/"})
        # Every other path of the site is the same article, whose navigation links a crawl would
        # follow too: the crawl is held to the start page and the guides — four pages, `/?view=mobile`
        # (the article's own link to its start page) among them — and its budget holds all four, so
        # which pages are read first does not decide what comes back.
        crawled = await session.call_tool(
            "web_crawl",
            {"url": f"{site_url}/", "limit": 10, "max_tokens": 8000, "include_paths": ["^/$", "^/guide/"]},
        )
        return mapped, crawled

    mapped, crawled = asyncio.run(over_http(reading_gateway_url, calls))
    assert not mapped.is_error, mapped.content[0].text
    links = [link["url"] for link in mapped.structured_content["links"]]
    assert f"{site_url}/guide/crawling" in links
    assert f"{site_url}/private/notes" not in links  # robots.txt disallows it
    assert not crawled.is_error, crawled.content[0].text
    pages = sorted(page["url"] for page in crawled.structured_content["pages"])
    assert pages == [
        f"{site_url}/",
        f"{site_url}/?view=mobile",
        f"{site_url}/guide/crawling",
        f"{site_url}/guide/mapping",
    ]
    assert 0 < crawled.structured_content["tokens"] <= 8000
