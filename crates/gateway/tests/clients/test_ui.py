"""The operator's page (/ui) in a real browser: Debian's headless Chromium driven through chromedriver by
the selenium bindings, against a gateway that requires a key (UI_GATEWAY_URL, its key UI_KEY), has an
ADMIN_TOKEN, a simulated Brave, and a simulated SearXNG whose engine `gamma` answers "too many requests"
(so the first search trips gamma's breaker).

tests/integration/real_clients.rs starts that gateway and runs this file. The page refreshes every 3 s:
every wait below is a hang guard (WAIT seconds, several refreshes), never a measurement.
"""

import os
import uuid

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 20


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these through `cargo test --test integration real_clients`")
    return value


@pytest.fixture(scope="module")
def gateway() -> str:
    return _env("UI_GATEWAY_URL")


@pytest.fixture(scope="module")
def key() -> str:
    return _env("UI_KEY")


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                     "--no-proxy-server"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    yield driver
    driver.quit()


def severe(driver) -> list:
    """The browser's console errors since the last call (reading the log empties it). The page itself
    declares no icon to fetch; the plain-text licence file `open_page` passes through does make the
    browser ask for /favicon.ico (a 404 that is not the page's)."""
    return [entry for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and "/favicon.ico " not in entry["message"]]


def open_page(driver, gateway: str, key: str | None) -> None:
    """Loads /ui with `key` already in the tab's session storage (as typing it would leave it)."""
    driver.get(gateway + "/ui/uPlot.LICENSE")
    driver.execute_script("sessionStorage.clear();")
    if key:
        driver.execute_script("sessionStorage.setItem('searxng-gateway.api-key', arguments[0]);", key)
    driver.get(gateway + "/ui")


def wait(driver):
    # The page redraws its tables on every refresh: an element found a moment ago may be gone
    # by the time it is read, and the next poll finds the new one.
    return WebDriverWait(driver, WAIT, poll_frequency=0.1,
                         ignored_exceptions=[StaleElementReferenceException])


def search(gateway: str, key: str, query: str) -> requests.Response:
    response = requests.get(gateway + "/search", params={"q": query, "format": "json"},
                            headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response


def status(gateway: str, key: str) -> dict:
    return requests.get(gateway + "/status", headers={"Authorization": f"Bearer {key}"}, timeout=30).json()


def test_the_page_loads_and_draws_with_no_console_error(browser, gateway, key):
    open_page(browser, gateway, key)
    wait(browser).until(ec.text_to_be_present_in_element((By.ID, "refreshed"), "Updated"))
    # uPlot drew both charts; every panel has rows.
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rps-chart canvas")) == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, "#latency-chart canvas")) == 1
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#instance-table tbody tr[data-instance]"))
    assert browser.find_element(By.CSS_SELECTOR, "#provider-table tr[data-provider='brave']")
    assert browser.find_element(By.ID, "message").is_displayed() is False
    # A refresh later, still nothing in the console.
    before = browser.find_element(By.ID, "refreshed").text
    wait(browser).until(lambda d: d.find_element(By.ID, "refreshed").text != before)
    assert severe(browser) == []


def test_a_search_through_search_appears_in_the_recent_list_within_a_refresh(browser, gateway, key):
    open_page(browser, gateway, key)
    query = f"selenium sees {uuid.uuid4().hex[:8]}"
    search(gateway, key, query)
    row = wait(browser).until(lambda d: next(
        (r for r in d.find_elements(By.CSS_SELECTOR, "#search-table tbody tr[data-request-id]")
         if query in r.text), None))
    assert "operator" in row.text
    assert "searxng_ok" in row.text
    # A client's key lists that client's own searches only, and the page says so.
    assert "Only operator's own searches" in browser.find_element(By.ID, "scope").text
    # A click opens its explain record.
    row.click()
    dialog = wait(browser).until(ec.visibility_of_element_located((By.ID, "explain-dialog")))
    assert browser.find_element(By.ID, "explain-title").text == query
    assert '"fanout"' in browser.find_element(By.ID, "explain-body").text
    assert "operator" in dialog.text
    browser.find_element(By.ID, "explain-close").click()
    wait(browser).until(ec.invisibility_of_element_located((By.ID, "explain-dialog")))
    assert severe(browser) == []


def test_a_query_with_html_in_it_renders_as_text(browser, gateway, key):
    open_page(browser, gateway, key)
    query = f'<img src=x onerror="window.pwned=1"><script>window.pwned=2</script><b>{uuid.uuid4().hex[:6]}</b>'
    search(gateway, key, query)
    cell = wait(browser).until(lambda d: next(
        (c for c in d.find_elements(By.CSS_SELECTOR, "#search-table td.query")
         if c.get_attribute("textContent") == query), None))
    assert cell.find_elements(By.CSS_SELECTOR, "*") == [], "no element was made from the query"
    assert browser.find_elements(By.CSS_SELECTOR, "#search-table img, #search-table script, #search-table b") == []
    assert browser.execute_script("return window.pwned === undefined")
    assert severe(browser) == []


def test_an_engine_breaker_tripped_in_searxng_shows_open_with_its_reason(browser, gateway, key):
    search(gateway, key, f"trip gamma {uuid.uuid4().hex[:6]}")
    open_page(browser, gateway, key)
    row = wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "tr[data-breaker='engine/gamma']")))
    assert row.find_element(By.CSS_SELECTOR, ".state").text == "open"
    assert row.find_element(By.CSS_SELECTOR, ".reason").text == "rate_limited"
    assert severe(browser) == []


def test_opening_a_breaker_from_the_page_with_the_admin_token_changes_status(browser, gateway, key):
    def brave() -> dict:
        return next(b for b in status(gateway, key)["breakers"]
                    if b["namespace"] == "provider" and b["name"] == "brave")

    assert brave()["state"] == "closed"
    open_page(browser, gateway, key)
    # Without the token, no action is offered.
    browser.find_element(By.ID, "show-closed").click()
    row = wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "tr[data-breaker='provider/brave']")))
    assert not row.find_element(By.CSS_SELECTOR, "button[data-action='open']").is_displayed()
    browser.find_element(By.ID, "admin-input").send_keys(_env("ADMIN_TOKEN"))
    browser.find_element(By.CSS_SELECTOR, "#admin-form button[type='submit']").click()
    # The token reads every client's data: the page no longer says it lists one client's.
    wait(browser).until(ec.invisibility_of_element_located((By.ID, "scope")))
    button = wait(browser).until(ec.visibility_of_element_located(
        (By.CSS_SELECTOR, "tr[data-breaker='provider/brave'] button[data-action='open']")))
    button.click()
    # A confirmation first: nothing changes until it is given.
    wait(browser).until(ec.visibility_of_element_located((By.ID, "confirm-dialog")))
    assert "brave" in browser.find_element(By.ID, "confirm-text").text
    assert brave()["state"] == "closed"
    browser.find_element(By.ID, "confirm-ok").click()
    WebDriverWait(None, WAIT, poll_frequency=0.1).until(lambda _: brave()["state"] == "open")
    wait(browser).until(ec.text_to_be_present_in_element((By.ID, "notice"), "Opened the provider brave breaker"))
    # And closed again from the page.
    close = wait(browser).until(ec.visibility_of_element_located(
        (By.CSS_SELECTOR, "tr[data-breaker='provider/brave'] button[data-action='close']")))
    close.click()
    wait(browser).until(ec.visibility_of_element_located((By.ID, "confirm-dialog")))
    browser.find_element(By.ID, "confirm-ok").click()
    WebDriverWait(None, WAIT, poll_frequency=0.1).until(lambda _: brave()["state"] == "closed")
    # The token never went into a URL: only the page's own paths were loaded.
    assert _env("ADMIN_TOKEN") not in browser.current_url
    assert severe(browser) == []


def test_a_wrong_key_shows_a_clear_message(browser, gateway, key):
    open_page(browser, gateway, None)
    message = wait(browser).until(ec.visibility_of_element_located((By.ID, "message")))
    assert "requires an API key" in message.text
    browser.find_element(By.ID, "key-input").send_keys("not-the-key")
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type='submit']").click()
    wait(browser).until(ec.text_to_be_present_in_element((By.ID, "message"), "refused the API key"))
    assert "not valid" in browser.find_element(By.ID, "message").text
    assert "not-the-key" not in browser.current_url
    # The right key, typed, brings the page back.
    browser.find_element(By.ID, "key-input").send_keys(key)
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type='submit']").click()
    wait(browser).until(ec.invisibility_of_element_located((By.ID, "message")))
    wait(browser).until(ec.text_to_be_present_in_element((By.ID, "refreshed"), "Updated"))
