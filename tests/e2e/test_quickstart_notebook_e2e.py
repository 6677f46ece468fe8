"""examples/quickstart.ipynb runs top to bottom in a fresh Jupyter kernel (nbclient), every public
call draws its view there, and the views' HTML, opened in headless Chromium, shows its pictures
with no console error and no request outside the page.

The kernel is a fresh process: the notebook's first cell fixes the device count before JAX
starts, as a user's would. Its cells also run as a script on 1, 3 and 16 devices (no kernel
needed for that), since everything in it is sized from the devices it has. The executed
notebook is kept in artifacts/ (its views, one HTML page, and a screenshot for the README).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import expect

from harness import ROOT
from harness.browser import ARTIFACTS

pytestmark = pytest.mark.e2e
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
PUBLIC = ("devices", "plan", "show", "collective", "compiled", "mesh", "timing")


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = {**os.environ, "PMAPVIZ_DEVICES": ""}  # the notebook asks for its own count
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT)}},
    )
    client.km = client.create_kernel_manager()
    client.start_new_kernel(env=env)
    client.start_new_kernel_client()
    try:
        client.execute(cleanup_kc=False)  # raises CellExecutionError on the first error
    finally:
        client._cleanup_kernel()
    return nb


def _outputs(nb) -> list[tuple[str, str, str]]:
    """(the cell's source, its HTML output, its text output) for every code cell."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
        text = "".join(
            o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs
        )
        out.append((cell.source, html, text))
    return out


def test_the_notebook_runs_and_every_public_call_draws_a_view(executed):
    outputs = _outputs(executed)
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    for name in PUBLIC:
        drawn = [h for src, h, _ in outputs if f"pmapviz.{name}(" in src and "pmapviz-view" in h]
        assert drawn, f"no cell calling pmapviz.{name}() drew its view"
        assert all("<script" not in h and "http" not in h for h in drawn), name
    said = "\n".join(text + html for _, html, text in outputs)
    assert "8 x cpu (cpu)" in said  # the first cell fixed the count in the fresh kernel
    assert "Reshape x (10_000_000, 3) to (8, 1_250_000, 3)" in said  # the plan's fix
    assert "all-reduce" in said  # compiled(): psum became an all-reduce
    assert "P(None, &#x27;data&#x27;, &#x27;model&#x27;)" in said  # show() of the mesh array


def test_the_views_open_in_chromium_with_pictures_and_nothing_from_outside(executed, browser):
    views = [html for _, html, _ in _outputs(executed) if html]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page_file = ARTIFACTS / "quickstart-notebook.html"
    page_file.write_text(
        "<!doctype html><meta charset='utf-8'><title>pmapviz quickstart</title>"
        "<body style='max-width:1100px;margin:16px auto'>" + "\n".join(views) + "</body>"
    )
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    outside, errors = [], []
    context.route(re.compile(r"^(?!file:).*"), lambda r: (outside.append(r.request.url), r.abort()))
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(page_file.as_uri())
        expect(page.locator(".pmapviz-view")).to_have_count(
            sum(h.count("class='pmapviz-view'") for h in views)
        )
        pictures = page.locator("[role='img'][aria-label], [role=\"img\"][aria-label]")
        assert pictures.count() >= len(PUBLIC)
        box = pictures.first.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 20  # drawn, not collapsed
        page.screenshot(path=str(ARTIFACTS / "quickstart-notebook.png"), full_page=True)
        mesh_view = page.locator(".pmapviz-view", has_text="z: (4, ")
        mesh_view.screenshot(path=str(ARTIFACTS / "quickstart-show.png"))  # the README's
        assert outside == [] and errors == []
    finally:
        context.close()


RUN_CELLS = """
import ast, json, sys
count = int(sys.argv[2])
nb = json.load(open(sys.argv[1]))
scope = {}
for k, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
    src = "".join(cell["source"]).replace("pmapviz.devices(8)", f"pmapviz.devices({count})")
    tree = ast.parse(src)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, f"cell {k}", "exec"), scope)
    value = eval(compile(ast.Expression(last.value), f"cell {k}", "eval"), scope) if last else None
    if hasattr(value, "_repr_html_") and "pmapviz-view" in value._repr_html_():
        print(f"cell {k}: {str(value).splitlines()[0]}")
"""


# long walks (tests/rotation.py), a count a run: every run runs every cell on this server's count
# (above)
@pytest.mark.parametrize(
    "count", [pytest.param(n, marks=pytest.mark.rotates(cpu_s=3.5)) for n in (1, 3, 16)]
)
def test_every_cell_runs_on_other_device_counts(count):
    """The notebook sizes everything from the devices it has: its cells, run in order as a
    script with the first cell asking for ``count`` devices, all run and draw their views."""
    env = {**os.environ, "PMAPVIZ_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", RUN_CELLS, str(NOTEBOOK), str(count)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout
    assert f"{count} cpu devices" in said or f"{count} x cpu (cpu)" in said, said
    assert f"jax.pmap plan of vdot on {count} device(s): OK" in said, said
    assert said.count("cell ") >= 10, said
