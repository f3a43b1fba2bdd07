"""The load and the picture for scripts/ui-screenshot.sh: searches the demo's gateway at GATEWAY for SECONDS
(a few queries asked again and again, so there are cache hits, misses and premium fallbacks beside the
demo's own scenario), then photographs its /ui page in headless Chromium, 1280 px wide, the whole page.

Usage: python ui-screenshot.py GATEWAY OUTPUT SECONDS
"""

import random
import sys
import time

import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

QUERIES = [
    "rust async runtime", "self-hosted search", "prometheus histogram quantile", "circuit breaker pattern",
    "searxng engines", "tokio select", "reciprocal rank fusion", "obscure zine archive", "axum middleware",
    "redis cluster hash tags", "envoy outlier detection", "<b>html</b> in a query",
]


def main() -> None:
    gateway, output, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    session = requests.Session()
    deadline = time.monotonic() + 60
    while True:
        try:
            if session.get(gateway + "/readyz", timeout=5).status_code == 200:
                break
        except requests.ConnectionError:
            pass
        if time.monotonic() > deadline:
            sys.exit("the demo's gateway did not become ready within 60 s")
        time.sleep(0.2)

    rng = random.Random(31)
    end = time.monotonic() + seconds
    searches = 0
    while time.monotonic() < end:
        query = rng.choice(QUERIES)
        # Now and then a query nobody asked before: a miss.
        if rng.random() < 0.3:
            query = f"{query} {rng.randint(1, 10_000)}"
        session.get(gateway + "/search", params={"q": query, "format": "json"}, timeout=30)
        searches += 1
        time.sleep(rng.uniform(0.05, 0.4))
    print(f"ui-screenshot: {searches} searches in {seconds:.0f} s")

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                     "--hide-scrollbars", "--no-proxy-server"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        driver.get(gateway + "/ui")
        WebDriverWait(driver, 30).until(ec.text_to_be_present_in_element((By.ID, "refreshed"), "Updated"))
        driver.find_element(By.ID, "show-closed").click()
        height = driver.execute_script("return document.documentElement.scrollHeight")
        # The whole page, up to about half of the 50 searches: enough to see every panel.
        driver.set_window_size(1280, min(height + 40, 2600))
        time.sleep(1)  # the charts take the new size
        driver.save_screenshot(output)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
