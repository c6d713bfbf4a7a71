"""A real headless browser (Debian's chromium, driven by Playwright) opening a Snakemake report."""

import os
import shutil
import subprocess

CHROMIUM = "/usr/bin/chromium"
# What a self-contained page may load besides its own file: what it carries inline.
INLINE_SCHEMES = {"data", "blob", "about"}


def ensure_chromium() -> str:
    """Debian's chromium, installed with apt-get when missing (CI runs as root on a fresh machine)."""
    if not shutil.which(CHROMIUM):
        environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=environment, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=environment, capture_output=True
        )
    return CHROMIUM


# Every image result of the report decoded by the browser itself: {path: natural width}.
DECODE_IMAGES = """async () => {
    const sizes = {};
    for (const [path, entry] of Object.entries(results)) {
        if (!entry.mime_type.startsWith("image/")) continue;
        const image = new Image();
        image.src = entry.data_uri;
        try { await image.decode(); sizes[path] = image.naturalWidth; } catch (error) { sizes[path] = 0; }
    }
    return sizes;
}"""


def open_first_result(page, category, subcategory):
    """Through the menu: the category, its subcategory, then the view button of its first result."""
    page.get_by_role("link", name=category, exact=True).click()
    page.get_by_role("link", name=subcategory, exact=True).click()
    page.locator("table tr td:last-child a").first.click()


def visit_report(report_path, screenshot_path, category, subcategory, table_category, table_subcategory):
    """Open the report; show one figure and one table through its menus as a reader would.

    Returns (errors the page logged, the URLs it requested beyond the report file and inline data,
    {image result: decoded width}, the shown figure's width, the shown table page's text).
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=ensure_chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            errors = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            fetched = []
            own_url = report_path.resolve().as_uri()
            page.on(
                "request",
                lambda request: (
                    None
                    if request.url == own_url or request.url.split(":", 1)[0] in INLINE_SCHEMES
                    else fetched.append(request.url)
                ),
            )
            page.goto(own_url)
            page.wait_for_load_state("networkidle")
            decoded = page.evaluate(DECODE_IMAGES)

            open_first_result(page, table_category, table_subcategory)
            table_text = page.frame_locator("iframe").locator("body").inner_text()

            page.goto(own_url)
            page.wait_for_load_state("networkidle")
            open_first_result(page, category, subcategory)
            figure = page.locator("img").last
            figure.wait_for()
            width = figure.evaluate("image => image.complete ? image.naturalWidth : 0")
            page.screenshot(path=str(screenshot_path), full_page=True)
            return errors, fetched, decoded, width, table_text
        finally:
            browser.close()
