"""Markdown and HTML typed into every text field of every page, in headless Chromium.

Every page of the app's registry (``PAGES``: a new page is walked too), in each view that shows more
text fields (VIEWS), on each of its tabs, with any closed expander that holds a text field opened.
Every visible text input and text area gets the PAYLOADS: as many at once as fit its ``max_chars``
(Streamlit refuses a longer value whole), in as few rounds as that takes; each round is submitted
(Enter; Ctrl+Enter in a text area), its run waited out, and the page checked. The field's own value
is put back before the next field, so each field's text is seen while the others hold good values
(the path on which a value is echoed rather than refused). Fields are walked bottom first: a field
further down may depend on one above (f's arguments name the argument boxes), never the other way
round.

Your own f carries the payloads further: as keys it indexes with, and as the dict keys of its
output, shown by the explorer and by the pages that run its scenario in the same session (Live
outputs, Timing lab, Compiled program); and as the Meshes page's two views of f.

After every round: no element pointing at the payloads' host (image, link, ...), no <b>, <strong>,
<em> or <i> holding a payload's inner text, no formula made from one, no event-handler attribute,
no Streamlit exception box, no last-resort message, no script dialog. Over each whole walk the
browser asked for no URL outside 127.0.0.1/localhost: every such request is recorded (with the
step that made it); none is fetched, since the test browser resolves no other host.

Runs no long action: no Run, Train, Launch or Time button is pressed. The suite walks a quarter
of the views, a different quarter as the commits go (harness/sweeps.py);
``benchmarks/sweeps.py`` walks them all.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from harness import EXCEPTIONS, MAIN, SIDEBAR, sweeps, wait_rendered
from pmapviz.app.page_registry import PAGES
from pmapviz.core.ui import shell

pytestmark = pytest.mark.e2e

EVIL = "evil.example"
# (payload, what it would make if rendered); the inner texts Q1..Q4 appear nowhere else
PAYLOADS = (
    (f"![x](http://{EVIL}/a.png)", "a Markdown image"),
    (f"[click](http://{EVIL}/)", "a Markdown link"),
    (f"<img src=http://{EVIL}/b.png>", "an HTML image"),
    ("<b>Q2</b>", "HTML bold"),
    ("**Q1**", "Markdown strong"),
    ("a` **Q3** `b", "strong, out of a code span the text is put in"),
    ("$Q4$", "a formula"),
)
BOLD_TEXTS = ("Q1", "Q2", "Q3")
FORMULA_TEXTS = ("Q4",)
LOCAL_HOSTS = ("127.0.0.1", "localhost")
QUIET_MS = 100  # a run has ended when the server sent nothing for this long
NO_RUN_S = 15  # a submit after which the server sends nothing this long started no run

# Views of a page that show text fields its bare address does not, one visit each (a page not named
# here is visited at its bare address).
VIEWS: dict[str, list[str]] = {
    "explorer": ["?fn=expr"],  # your own f: also "Arguments" and "f(...) ="
    "collectives": ["?c=psum", "?c=ppermute&p=custom"],  # groups; pairs
    "compiled": ["?src=collective&c=psum", "?src=collective&c=ppermute"],
}
# Pages known to hold text fields: a walk that finds none there has lost its selectors.
HAS_FIELDS = {"explorer", "collectives", "training", "cluster", "compiled", "meshes", "types"}

FIELDS = '[data-testid="stTextInput"] input, [data-testid="stTextArea"] textarea'
TABS = f'{MAIN} [data-testid="stTabs"] [role="tab"]'

# Every visible, enabled text field: its widget key (Streamlit's st-key-* class), label, kind.
# Not a password field (the presenter key): what is typed there is shown nowhere, ever.
_LIST_FIELDS = """(sel) => [...document.querySelectorAll(sel)]
    .filter(e => e.offsetParent !== null && !e.disabled && !e.readOnly && e.type !== 'password')
    .map(e => {
        const box = e.closest('[class*="st-key-"]');
        const key = box ? [...box.classList].find(c => c.startsWith('st-key-')) : null;
        return {cls: key, label: e.getAttribute('aria-label') || '',
                area: e.tagName === 'TEXTAREA', value: e.value};
    })"""

# The longest text a field takes: Streamlit refuses a value over max_chars whole (the box keeps
# its text) and sets no maxlength. Probed with React's own input events, then put back.
_MAX_CHARS = """(el) => {
    const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement : HTMLInputElement;
    const set = Object.getOwnPropertyDescriptor(proto.prototype, 'value').set;
    const before = el.value;
    const takes = (n) => {
        const t = 'x'.repeat(n);
        set.call(el, t);
        el.dispatchEvent(new Event('input', {bubbles: true}));
        return el.value === t;
    };
    let lo = 0, hi = 4096;
    if (takes(hi)) lo = hi;
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (takes(mid)) lo = mid; else hi = mid; }
    set.call(el, before);
    el.dispatchEvent(new Event('input', {bubbles: true}));
    return lo;
}"""

# Counts the server's websocket messages: every run of the script sends some. (A run on bad
# text can start and end between two polls of the page's script state: polling alone misses it.)
_COUNT_MESSAGES = """(() => {
    const Native = window.WebSocket;
    window.__pzMessages = 0;
    window.__pzLast = 0;
    window.WebSocket = class extends Native {
        constructor(...args) {
            super(...args);
            this.addEventListener('message', () => {
                window.__pzMessages += 1;
                window.__pzLast = performance.now();
            });
        }
    };
})();"""

# Messages came since ``armed``, none for ``quiet`` ms, and the page has settled.
_RAN_AND_SETTLED = """([armed, quiet]) => {
    const app = document.querySelector('[data-testid="stApp"]');
    return window.__pzMessages > armed && performance.now() - window.__pzLast >= quiet
        && !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-stale="true"]')
        && !document.querySelector('[data-testid="stMain"] [data-testid="stSkeleton"]');
}"""

# What a payload made on the page, and any exception box or last-resort message.
_INJECTED = """([evil, bold, formula, local, unexpected]) => {
    const found = [];
    const host = (v) => { try { return new URL(v, location.href).hostname; }
                          catch (e) { return ''; } };
    const fetches = /^(src|href|srcset|xlink:href|data|action|formaction|poster|style)$/i;
    for (const el of document.querySelectorAll('*')) {
        const tag = el.tagName.toLowerCase();
        for (const attr of el.getAttributeNames()) {
            const v = el.getAttribute(attr) || '';
            if (/^on/i.test(attr) && el.closest('[data-testid="stApp"]'))
                found.push(`<${tag} ${attr}>`);
            // a link back to this server whose query holds the text points nowhere else
            if (fetches.test(attr) && v.includes(evil)
                    && (attr === 'style' || !local.includes(host(v))))
                found.push(`<${tag} ${attr}=${v.slice(0, 50)}>`);
        }
    }
    const app = document.querySelector('[data-testid="stApp"]') || document.body;
    for (const el of app.querySelectorAll('b, strong, em, i')) {
        const t = el.textContent.trim();
        if (bold.includes(t)) found.push(`<${el.tagName.toLowerCase()}>${t}`);
    }
    for (const el of app.querySelectorAll('.katex')) {
        const t = el.textContent.trim();
        if (formula.some(f => t.startsWith(f))) found.push(`a formula ${t}`);
    }
    if (document.querySelector('[data-testid="stException"]'))
        found.push('a Streamlit exception box');
    if (app.innerText.includes(unexpected)) found.push("app.py's last resort caught an error");
    return [...new Set(found)];
}"""


def packed_rounds(fits) -> list[list[str]]:
    """The PAYLOADS in as few rounds as a field takes: each round joins (with spaces) as many
    not yet sent as ``fits`` (the field takes the text) allows, in PAYLOADS' order. A payload
    the field cannot hold even alone is left out: it never reaches the app."""
    todo = [p for p, _ in PAYLOADS if fits(p)]
    rounds = []
    while todo:
        taken = []
        for p in todo:
            if fits(" ".join([*taken, p])):
                taken.append(p)
        rounds.append(taken)
        todo = [p for p in todo if p not in taken]
    return rounds


@dataclass
class Walk:
    """One browser page's walk: where it is, what it found and what went wrong."""

    page: object
    base: str
    where: str = ""
    outside: list[tuple[str, str]] = field(default_factory=list)  # (where, URL) asked for
    dialogs: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # not failures: what the walk met
    fields: dict[str, list[str]] = field(default_factory=dict)  # view -> "label (rounds)"
    seconds: dict[str, float] = field(default_factory=dict)  # view -> seconds walked
    rounds: int = 0
    checks: int = 0
    walked: set[tuple[str, str]] = field(default_factory=set)  # (page, field) walked

    def __post_init__(self):
        # Every request the page makes is seen here; one for another host is recorded. None is
        # fetched: the test browser resolves no host but this machine's (CHROMIUM_ARGS). (A
        # route would intercept them too, but routing turns off the browser's cache, and every
        # page load would compile Streamlit's scripts again: twice the CPU of this walk.)
        def request(r):
            if (urllib.parse.urlsplit(r.url).hostname or "") not in LOCAL_HOSTS:
                self.outside.append((self.where, r.url[:160]))

        def dialog(d):
            self.dialogs.append(f"a script ran: {d.type}({d.message[:40]!r})")
            d.dismiss()

        self.page.on("request", request)
        self.page.context.add_init_script(_COUNT_MESSAGES)
        self.page.on("dialog", dialog)

    # ------------------------------------------------------------------ steps

    def open(self, path: str) -> None:
        """A new session on ``path`` (every setting from the link or its default), checked."""
        self.where = path
        self.page.goto(self.base + path)
        wait_rendered(self.page, quiet_ms=QUIET_MS)
        self.check(path)

    def check(self, what: str) -> None:
        found = self.page.evaluate(
            _INJECTED,
            [EVIL, list(BOLD_TEXTS), list(FORMULA_TEXTS), list(LOCAL_HOSTS), shell.UNEXPECTED],
        )
        found += self.dialogs
        self.dialogs.clear()
        self.checks += 1
        self.failures += [f"{what}: {f}" for f in found]

    def submitted(self, action) -> bool:
        """Run ``action`` (a submit) and wait out the run it starts; False when the server sent
        nothing for NO_RUN_S seconds (no run started)."""
        armed = self.page.evaluate("() => window.__pzMessages")
        action()
        try:
            self.page.wait_for_function(
                _RAN_AND_SETTLED, arg=[armed, QUIET_MS], polling=20, timeout=NO_RUN_S * 1000
            )
        except PlaywrightTimeout:
            if self.page.evaluate("() => window.__pzMessages") == armed:
                return False
            self.page.wait_for_function(
                _RAN_AND_SETTLED, arg=[armed, QUIET_MS], polling=20, timeout=120_000
            )
        return True

    def type_into(self, f: dict, text: str) -> bool:
        """Fill one field and submit it; False when the field refuses the text (too long)."""
        box = self.box(f)
        box.fill(text)
        if box.input_value() != text:
            return False
        if text != f["committed"]:
            key = "Control+Enter" if f["area"] else "Enter"
            if not self.submitted(lambda: box.press(key)):
                self.failures.append(f"{self.where}: submitting it started no run")
        f["committed"] = text
        return True

    def box(self, f: dict):
        if f["cls"]:
            return self.page.locator(f'[class~="{f["cls"]}"]').locator(FIELDS).first
        return self.page.locator(FIELDS).and_(self.page.get_by_label(f["label"], exact=True)).first

    def present(self, f: dict) -> bool:
        box = self.box(f)
        return bool(box.count()) and box.is_visible() and box.is_enabled()

    def select_tab(self, t: int) -> None:
        """Tabs switch in the browser (no run); then open what hides a text field."""
        tab = self.page.locator(TABS).nth(t)
        tab.click()
        expect(tab).to_have_attribute("aria-selected", "true")
        self.open_sections()

    def open_sections(self) -> None:
        """Open each closed expander that holds a text field (its fields are in the page but
        hidden); an expander without a text field stays closed: opening some starts work."""
        closed = self.page.locator(f"{MAIN} details:not([open])").filter(
            has=self.page.locator(FIELDS)
        )
        for _ in range(closed.count()):
            closed.first.locator("summary").first.click()
            wait_rendered(self.page, quiet_ms=QUIET_MS)

    def reopen(self, view: str, tab: int | None, f: dict) -> None:
        """After a text that hid its own field: the view afresh, on its tab."""
        self.notes.append(f"{self.where}: hid the field; the view was opened afresh")
        self.open(view.split()[0])
        if tab is not None:
            self.select_tab(tab)
        f["committed"] = self.box(f).input_value()

    # ------------------------------------------------------------------ the walk

    def walk_view(self, view: str) -> None:
        t0 = time.perf_counter()
        self.open(view)
        tabs = self.page.locator(TABS)
        n = tabs.count()
        for t in range(max(n, 1)):
            if n:
                self.select_tab(t)
            else:
                self.open_sections()
            name = f"{view} [tab {tabs.nth(t).inner_text()!r}]" if n else view
            self.every_field(name, t if n else None, last_tab=t >= n - 1)
        self.seconds[view] = time.perf_counter() - t0

    def every_field(self, view: str, tab: int | None, last_tab: bool) -> None:
        """Each field not walked in another view of this page, bottom first."""
        page_path = view.split("?")[0].split()[0]
        found = [
            f
            for f in reversed(self.page.evaluate(_LIST_FIELDS, FIELDS))
            if (page_path, f["cls"] or f["label"]) not in self.walked
        ]
        for k, f in enumerate(found):
            f["committed"] = f["value"]
            name = f"{view} / {f['label']!r}"
            self.where = name
            if not self.present(f):
                self.failures.append(f"{name}: the field went away (coverage lost)")
                continue
            limit = self.box(f).evaluate(_MAX_CHARS)
            rounds = packed_rounds(lambda text, limit=limit: len(text) <= limit)
            if not rounds:
                self.failures.append(f"{name}: takes none of the payloads (at most {limit})")
            for texts in rounds:
                if not self.present(f):
                    self.reopen(view, tab, f)
                self.where = f"{name} = {' '.join(texts)!r}"
                if self.type_into(f, " ".join(texts)):
                    self.rounds += 1
                    self.check(self.where)
                else:
                    self.failures.append(f"{self.where}: refused, though {limit} chars fit")
            self.fields.setdefault(view, []).append(f"{f['label'].strip()} ({len(rounds)})")
            self.walked.add((page_path, f["cls"] or f["label"]))
            if last_tab and k == len(found) - 1:
                break  # the view's last field: the next view starts afresh anyway
            self.where = f"{name} put back"
            if not self.present(f):
                self.reopen(view, tab, f)
            elif self.type_into(f, f["value"]):
                self.check(self.where)


def _page_of(view: str) -> str:
    """The registry's url_path of a walked view ("/explorer?fn=expr [tab 'x']": explorer)."""
    return view.split("?")[0].split()[0].strip("/") or PAGES[0].url_path


def page_views() -> list[str]:
    """The address of every page of the registry, in each of its VIEWS."""
    out = []
    for i, p in enumerate(PAGES):
        path = "/" if i == 0 else f"/{p.url_path}"  # the first page is the default one
        out += [path + q for q in VIEWS.get(p.url_path, [""])]
    return out


def report(walk: Walk, seconds: float) -> str:
    n = sum(len(v) for v in walk.fields.values())
    lines = [
        f"{walk.checks} checks; {n} text fields in {len(walk.fields)} views, "
        f"{walk.rounds} rounds; {seconds:.0f} s"
    ]
    lines += [f"  {view}: {', '.join(labels)}" for view, labels in walk.fields.items()]
    if walk.seconds:
        lines.append("  seconds: " + ", ".join(f"{v} {t:.1f}" for v, t in walk.seconds.items()))
    lines += [f"note: {n}" for n in walk.notes]
    lines += [f"FAIL {f}" for f in walk.failures]
    first: dict[str, tuple[str, int]] = {}
    for where, url in walk.outside:
        at, k = first.get(url, (where, 0))
        first[url] = (at, k + 1)
    lines += [
        f"OUTSIDE URL {url} ({k} requests; the first at {at})" for url, (at, k) in first.items()
    ]
    return "\n".join(lines)


def test_the_walk_covers_the_registry_and_packs_payloads_by_length():
    """No browser: a renamed page must not drop out of VIEWS or HAS_FIELDS silently."""
    paths = {p.url_path for p in PAGES}
    assert set(VIEWS) <= paths
    assert HAS_FIELDS.issubset(paths)
    assert len(page_views()) == len(PAGES) + sum(len(v) - 1 for v in VIEWS.values())
    assert packed_rounds(lambda t: True) == [[p for p, _ in PAYLOADS]]
    assert packed_rounds(lambda t: len(t) <= 6) == [["**Q1**"], ["$Q4$"]]
    assert packed_rounds(lambda t: len(t) <= 2) == []
    assert all(" ".join(r) for r in packed_rounds(lambda t: len(t) <= 40))


@pytest.mark.timeout(600)
def test_markup_typed_into_every_text_field_renders_as_text(server, fresh_page):
    """The suite walks one part of the views (harness/sweeps.py: every fourth view, which fourth
    rotating with the commits); PMAPVIZ_SWEEP=all walks them all (benchmarks/sweeps.py)."""
    page = fresh_page
    t0 = time.perf_counter()
    walk = Walk(page, server)
    part = sweeps.part()
    views = part.take(page_views())
    for view in views:
        walk.walk_view(view)
    text = f"{part}: {views}\n" + report(walk, time.perf_counter() - t0)
    print(text)
    walked = {_page_of(v) for v in walk.fields}
    due = HAS_FIELDS & {_page_of(v) for v in views}
    assert walked >= due, f"no text field found on {due - walked}\n{text}"
    if part.parts == 1:
        assert sum(len(v) for v in walk.fields.values()) >= 30, text
    assert not walk.failures, text
    assert not walk.outside, text
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


# Your own f: keys it indexes with, then a dict output whose keys are every payload.
OWN_F = "/explorer?fn=expr&args=x&body=x&s0=4,3&a0=0&out=0&name=i"
INDEXED = [f"x[{p!r}]" for p, _ in PAYLOADS[:2]]
# every payload, and a bare host name (which Markdown would make a link), as the output's keys
DICT_BODY = "{" + ", ".join(f"{p!r}: x" for p in (*(p for p, _ in PAYLOADS), f"www.{EVIL}")) + "}"
SHOWN_KEY = repr(PAYLOADS[0][0])  # the first key as the pages print it, as text


@pytest.mark.timeout(600)
# a long walk (tests/rotation.py): every run types hostile text into every text input in AppTest
# (tests/pages/test_fuzz.py) and markup into a part of the views in Chromium (above)
@pytest.mark.rotates(cpu_s=15)
def test_dict_keys_of_your_own_f_render_as_text_on_every_page_that_runs_it(server, fresh_page):
    page = fresh_page
    t0 = time.perf_counter()
    walk = Walk(page, server)
    main = page.locator(MAIN)
    walk.open(OWN_F)

    def own(key: str) -> dict:
        box = page.locator(f'[class~="st-key-{key}"]').locator(FIELDS).first
        return {"cls": f"st-key-{key}", "label": key, "area": False, "committed": box.input_value()}

    body, out = own("ex_body"), own("ex_out")
    for text in INDEXED:
        walk.where = f"explorer, f = {text}"
        assert walk.type_into(body, text), text
        expect(main).to_contain_text(text[2:-1])  # the key, named in the message as text
        walk.check(walk.where)
    walk.where = "explorer, f = a dict, out_axes {'b': 0}"
    assert walk.type_into(body, DICT_BODY)
    assert walk.type_into(out, "{'b': 0}")
    expect(main).to_contain_text(SHOWN_KEY)
    walk.check(walk.where)
    walk.where = "explorer, f = a dict"
    assert walk.type_into(out, "0")
    expect(main).to_contain_text("Valid.")
    expect(main).to_contain_text(SHOWN_KEY)  # in the output's tree
    walk.check(walk.where)
    # the same session's scenario on the pages that run it, opened from the sidebar
    for p in PAGES:
        if p.url_path not in ("live", "timing", "compiled"):
            continue
        walk.where = f"{p.url_path}, f = a dict"
        page.locator(SIDEBAR).get_by_role("link", name=p.title, exact=True).click()
        expect(page).to_have_url(re.compile(rf"/{p.url_path}(\?|$)"))
        expect(main.locator("h1").first).to_contain_text(p.title)
        wait_rendered(page, timeout_ms=120_000, quiet_ms=QUIET_MS)
        if p.url_path == "live":
            expect(main).to_contain_text(SHOWN_KEY)
        walk.check(walk.where)
    # the Meshes page's two views of f, each returning the dict
    walk.open("/meshes")
    for key in ("me_gf", "me_lf"):
        walk.where = f"meshes, {key} = a dict"
        assert walk.type_into(own(key), DICT_BODY.replace(": x", ": x @ w"))
        walk.check(walk.where)
    text = report(walk, time.perf_counter() - t0)
    print(text)
    assert not walk.failures, text
    assert not walk.outside, text
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
