"""Drives the toolgate admin console in a real headless Chromium (Debian's /usr/bin/chromium)
with Playwright, as an admin would: by the accessible names docs/console.md fixes.

Run by tests/it/console_browser.rs, which starts the gateway, seeds its catalog, opens an agent's
SSE stream, and passes (as environment variables):
  CONSOLE_BASE         the gateway's base URL
  ADMIN_TOKEN          an admin's token
  READER_TOKEN         a valid token that is not an admin's
  EXPIRED_TOKEN        an admin's token that has expired
  CHROMIUM             the browser (default /usr/bin/chromium)
  SCREENSHOTS          a directory to save the main pages' screenshots in (optional)
Prints one JSON line of figures (page weights) on success; any failed check raises.
"""

import http.server
import json
import os
import sys
import threading
import urllib.request

from playwright.sync_api import expect, sync_playwright

BASE = os.environ["CONSOLE_BASE"].rstrip("/")
ADMIN = os.environ["ADMIN_TOKEN"]
READER = os.environ["READER_TOKEN"]
EXPIRED = os.environ["EXPIRED_TOKEN"]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHOTS = os.environ.get("SCREENSHOTS")


def api(method, path, body=None, token=ADMIN):
    """The admin API, as another admin would use it at the same time (or the API as `token`)."""
    request = urllib.request.Request(
        BASE + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def shot(page, name):
    check_names(page)
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, f"console-{name}.png"), full_page=True)


class Weights:
    """Bytes received per page load (the document and everything it loads)."""

    def __init__(self, page):
        self.total = 0
        page.on("requestfinished", self.finished)

    def finished(self, request):
        sizes = request.sizes()
        self.total += sizes["responseBodySize"] + sizes["responseHeadersSize"]

    def measure(self, action):
        self.total = 0
        action()
        return self.total


NAMELESS = """() => [...document.querySelectorAll(
    'a, button, select, textarea, input:not([type=hidden])')].filter(el => {
        const labelled = el.labels && [...el.labels].some(l => l.textContent.trim());
        const named = el.getAttribute('aria-label') || el.getAttribute('title');
        return !(labelled || named || el.textContent.trim());
    }).map(el => el.outerHTML)"""


def check_names(page):
    """Every control of the page has an accessible name (docs/console.md, Quality)."""
    nameless = page.evaluate(NAMELESS)
    assert not nameless, f"{page.url}: controls without a name: {nameless}"


def foreign_page(action, fields):
    """Serves, on another origin, a page whose form posts to the console by itself."""
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    html = (f'<!doctype html><form id="f" method="post" action="{action}">{inputs}</form>'
            '<script>document.getElementById("f").submit()</script>').encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    figures = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        elsewhere = []
        foreign = {"origin": None}

        def record(request):
            if not request.url.startswith(BASE + "/") and not (
                    foreign["origin"] and request.url.startswith(foreign["origin"])):
                elsewhere.append(request.url)

        page.on("request", record)
        weights = Weights(page)

        # Sign-in refusals: a valid token that is not an admin's, an expired one.
        figures["sign_in_bytes"] = weights.measure(lambda: page.goto(BASE + "/console/"))
        shot(page, "sign-in")
        page.get_by_label("Admin token").fill(READER)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("not an administrator")
        page.get_by_label("Admin token").fill(EXPIRED)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("expired")
        assert not context.cookies(), "a refused sign-in sets no cookie"

        # Keyboard-only sign-in: the token field has the focus, Enter submits.
        page.goto(BASE + "/console/")
        expect(page.get_by_label("Admin token")).to_be_focused()
        page.keyboard.type(ADMIN)
        page.keyboard.press("Enter")
        page.wait_for_url(BASE + "/console/tools")
        expect(page.get_by_role("heading", name="Tools")).to_be_visible()
        cookie = context.cookies()[0]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
        assert ADMIN not in page.evaluate("document.cookie + JSON.stringify(localStorage) + "
                                          "JSON.stringify(sessionStorage) + location.href")
        figures["tools_bytes"] = weights.measure(lambda: page.reload())
        for name in ("Tools",):
            expect(page.get_by_role("link", name=name, exact=True)).to_be_visible()
        for header in ("Tool", "Source", "State"):
            expect(page.get_by_role("columnheader", name=header, exact=True)).to_be_visible()
        shot(page, "tools")

        # Search on the server, by name or description.
        page.get_by_label("Search").fill("refund")
        page.get_by_label("Search").press("Enter")
        expect(page.get_by_role("link", name="billing:refund")).to_be_visible()
        expect(page.get_by_role("link", name="billing:list_invoices")).to_have_count(0)
        page.get_by_label("Search").fill("")
        page.get_by_label("Search").press("Enter")

        # A disable with a reason: the impact first, then Apply.
        page.get_by_role("link", name="billing:list_invoices").click()
        expect(page.get_by_role("heading", name="Groups")).to_be_visible()
        figures["tool_bytes"] = weights.measure(lambda: page.reload())
        shot(page, "tool")
        page.get_by_role("button", name="Disable").click()
        impact = page.get_by_role("region", name="Impact")
        expect(impact).to_contain_text("billing:list_invoices")
        expect(impact).to_contain_text("reader")
        shot(page, "impact")
        assert api("GET", "/admin/tools/billing:list_invoices")["enabled"], "nothing yet"
        page.get_by_label("Reason").fill("maintenance window")
        page.get_by_role("button", name="Apply").click()
        expect(page.get_by_role("status")).to_contain_text("Disabled")
        tool = api("GET", "/admin/tools/billing:list_invoices")
        assert not tool["enabled"] and tool["disabled_reason"] == "maintenance window", tool

        # A write that loses a race: someone else changes the catalog after the page was shown.
        page.goto(BASE + "/console/tools/billing%3Arefund")
        page.get_by_role("button", name="Disable").click()
        api("POST", "/admin/labels", {"id": "l-race", "name": "race"})
        page.get_by_label("Reason").fill("too late")
        page.get_by_role("button", name="Apply").click()
        expect(page.get_by_role("alert")).to_contain_text("changed by someone else")
        assert api("GET", "/admin/tools/billing:refund")["enabled"], "nothing overwritten"
        page.get_by_role("link", name="Reload").click()
        expect(page.get_by_role("region", name="Impact")).to_be_visible()

        # A write from another origin, with the session's cookie and even its anti-CSRF token.
        csrf = page.locator("input[name=csrf]").first.get_attribute("value")
        revision = page.locator("input[name=revision]").get_attribute("value")
        server = foreign_page(BASE + "/console/tools/billing%3Arefund/disable",
                              {"csrf": csrf, "revision": revision, "reason": "forged"})
        foreign["origin"] = f"http://127.0.0.1:{server.server_port}"
        with page.expect_navigation(url=BASE + "/console/tools/billing%3Arefund/disable"):
            page.goto(foreign["origin"] + "/")
        expect(page.get_by_role("alert")).to_contain_text("origin")
        server.shutdown()
        assert api("GET", "/admin/tools/billing:refund")["enabled"], "a forged write changes nothing"

        # View as: the reader's tools (the disabled one only in the preview with hidden tools),
        # and why not the others.
        page.goto(BASE + "/console/tools")
        page.get_by_role("link", name="View as", exact=True).click()
        page.get_by_label("Claims (JSON)").fill('{"sub": "someone", "roles": ["reader"]}')
        page.get_by_role("button", name="Preview").click()
        granted = page.get_by_role("region", name="tools these claims get")
        expect(granted.get_by_role("columnheader", name="Tool")).to_be_visible()
        expect(granted.get_by_role("link", name="billing:search")).to_be_visible()
        expect(granted.get_by_role("link", name="billing:list_invoices")).to_have_count(0)
        page.get_by_label("Include disabled").check()
        page.get_by_role("button", name="Preview").click()
        row = granted.get_by_role("row").filter(has_text="billing:list_invoices")
        expect(row).to_contain_text("disabled")
        shot(page, "view-as")
        page.get_by_role("row").filter(has_text="billing:refund").get_by_role(
            "button", name="Why not?").click()
        expect(page.get_by_role("status")).to_contain_text("no policy these claims match")
        expect(page.get_by_role("status")).to_contain_text("'staff' (priority 0) would")
        page.reload()
        expect(page.get_by_role("status")).to_contain_text("no policy these claims match")

        # Audit: newest first, the disable with its reason as a readable difference, filtered.
        page.get_by_role("link", name="Audit", exact=True).click()
        for header in ("When", "Actor", "Action", "Entity", "Change"):
            expect(page.get_by_role("columnheader", name=header, exact=True)).to_be_visible()
        first = page.get_by_role("row").nth(1)
        expect(first).to_contain_text("labels")  # the race's write is the newest
        disabled = page.get_by_role("row").filter(has_text="billing:list_invoices").first
        expect(disabled).to_contain_text("disable")
        expect(disabled).to_contain_text("enabled: true → false")
        expect(disabled).to_contain_text('disabled_reason: + "maintenance window"')
        page.get_by_label("Entity").select_option("tools")
        page.get_by_label("Actor").fill("someone-else")
        page.get_by_role("button", name="Filter").click()
        expect(page.get_by_text("No change matches.")).to_be_visible()
        page.get_by_label("Actor").fill("admin-1")
        page.get_by_role("button", name="Filter").click()
        expect(page.get_by_role("row").filter(has_text="billing:list_invoices").first).to_be_visible()
        expect(page.get_by_role("row").filter(has_text="labels")).to_have_count(0)
        shot(page, "audit")

        # Groups: edit one as JSON; the impact first, then Apply.
        page.get_by_role("link", name="Groups", exact=True).click()
        for header in ("Group", "Name", "Active", "Members"):
            expect(page.get_by_role("columnheader", name=header, exact=True)).to_be_visible()
        page.get_by_role("link", name="g-read").click()
        editor = page.get_by_label("Definition (JSON)")
        group = json.loads(editor.input_value())
        group["excluded_tool_ids"] = ["billing:search"]
        editor.fill(json.dumps(group, indent=2))
        page.get_by_role("button", name="Preview changes").click()
        expect(page.get_by_role("region", name="Impact")).to_contain_text("billing:search")
        assert "billing:search" not in api("GET", "/admin/groups/g-read")["excluded_tool_ids"]
        shot(page, "group-impact")
        page.get_by_role("button", name="Apply").click()
        expect(page.get_by_role("status")).to_contain_text("Saved")
        assert api("GET", "/admin/groups/g-read")["excluded_tool_ids"] == ["billing:search"]
        # An edit that is not valid is refused with the field at fault; nothing is written.
        editor = page.get_by_label("Definition (JSON)")
        group = json.loads(editor.input_value())
        group["allowed_nothing"] = 1
        editor.fill(json.dumps(group))
        page.get_by_role("button", name="Preview changes").click()
        expect(page.get_by_role("alert")).to_contain_text("allowed_nothing")

        # Policies in the order they are evaluated; Sources with their import status; Labels.
        page.get_by_role("link", name="Policies", exact=True).click()
        rows = page.get_by_role("row")
        expect(rows.nth(1)).to_contain_text("p-read")
        for header in ("Policy", "Priority"):
            expect(page.get_by_role("columnheader", name=header, exact=True)).to_be_visible()
        page.get_by_role("link", name="Sources", exact=True).click()
        page.get_by_role("link", name="billing").click()
        expect(page.get_by_role("heading", name="Import status")).to_be_visible()
        page.get_by_role("button", name="Refresh").click()
        expect(page.get_by_role("alert")).to_contain_text("manual")
        page.get_by_role("link", name="Labels", exact=True).click()
        expect(page.get_by_role("link", name="l-race")).to_be_visible()

        # Live: the agent's open stream, and a change reaching it, shown without a reload.
        page.get_by_role("link", name="Live", exact=True).click()
        watched = page.get_by_role("region", name="Manifests being watched")
        expect(watched).to_contain_text('{"roles":["reader"]}')
        page.evaluate("window.stillHere = true")
        revision = api("POST", "/admin/tools/billing:list_invoices/enable")
        latest = api("GET", "/admin/live")["revision"]
        notifications = page.get_by_role("region", name="Last notifications")
        expect(notifications.get_by_role("row").nth(1)).to_contain_text(str(latest), timeout=2000)
        assert page.evaluate("window.stillHere === true"), "the page was reloaded"
        shot(page, "live")

        # Runs: an agent's run, its page, View as that run, then End run.
        run = api("POST", "/runs", {"state": "triage"}, token=READER)["run_id"]
        page.get_by_role("link", name="Runs", exact=True).click()
        runs = page.get_by_role("table")
        expect(runs.get_by_role("link", name=run)).to_be_visible()
        expect(runs.get_by_role("row").filter(has_text=run)).to_contain_text("triage")
        runs.get_by_role("link", name=run).click()
        expect(page.get_by_role("heading", name="Last calls")).to_be_visible()
        shot(page, "run")
        page.get_by_role("link", name="View as this run").click()
        expect(page.get_by_label("Run", exact=True)).to_have_value(run)
        expect(page.get_by_role("heading", name="tools these claims get")).to_be_visible()
        page.go_back()
        page.get_by_role("button", name="End run").click()
        expect(page.get_by_role("definition").filter(has_text="ended")).to_be_visible()
        page.get_by_role("link", name="Runs", exact=True).click()
        page.get_by_label("Active only").check()
        page.get_by_role("button", name="Filter").click()
        expect(page.get_by_role("link", name=run)).to_have_count(0)

        # Sign out ends the session: the console asks to sign in again.
        page.goto(BASE + "/console/tools")
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("Admin token")).to_be_visible()
        page.goto(BASE + "/console/tools")
        expect(page.get_by_label("Admin token")).to_be_visible()

        assert not elsewhere, f"requests to other origins: {elsewhere}"
        browser.close()
    print(json.dumps(figures))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - the test prints why
        print(f"console check failed: {error!r}", file=sys.stderr)
        raise
