"""Single sign-on in a real browser (Debian's Chromium, Playwright for Python): the sign-in
page's `Sign in with single sign-on` goes through the issuer (tests/it/console_sso.rs starts
it; it answers without a login form) and lands signed in on the Tools page, the session cookie
HttpOnly and SameSite=Strict, no token in the page's URL or storage.

Environment: CONSOLE_BASE (the gateway), ISSUER (the issuer's base URL), CHROMIUM (optional).
"""

import os

from playwright.sync_api import expect, sync_playwright

BASE = os.environ["CONSOLE_BASE"].rstrip("/")
ISSUER = os.environ["ISSUER"].rstrip("/")


def main():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), headless=True,
            args=["--no-sandbox"])
        page = browser.new_page()
        trail = []
        page.on("response", lambda r: trail.append(f"{r.status} {r.url} {r.headers.get('set-cookie', '')[:80]}"))
        page.goto(BASE + "/console/")
        page.get_by_role("button", name="Sign in with single sign-on").click()
        try:
            page.wait_for_url(BASE + "/console/tools", timeout=5000)
        except Exception:
            raise AssertionError(f"landed at {page.url}: {page.inner_text('body')[:500]} "
                                 f"cookies {page.context.cookies()} trail {trail}")
        expect(page.get_by_role("heading", name="Tools")).to_be_visible()
        session = [c for c in page.context.cookies() if c["name"] == "toolgate_console"]
        assert session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict", session
        leaked = page.evaluate("location.href + JSON.stringify(localStorage) + "
                               "JSON.stringify(sessionStorage) + document.cookie")
        assert "code=" not in leaked and "eyJ" not in leaked, leaked
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("Admin token")).to_be_visible()
        browser.close()


if __name__ == "__main__":
    main()
