"""The Meshes page's own f in a browser: a link with an out_specs that claims replication
shows the problem and its fix, the fixed f runs both ways; and the explorer's "Open as
shard_map" runs pmap beside shard_map and carries the arrays to the Meshes page."""

import pytest
from playwright.sync_api import expect

from harness import E2E_DEVICES, EXCEPTIONS, MAIN, screenshot, wait_rendered

pytestmark = pytest.mark.e2e
N = E2E_DEVICES
GATHER = "lax.all_gather(x%20%40%20w%2C%20%27model%27%2C%20axis%3D1%2C%20tiled%3DTrue)"


# a long walk (tests/rotation.py): every run refuses the claim with its fix in AppTest
# (tests/features/meshes/ui/test_mesh_own.py)
@pytest.mark.rotates(cpu_s=8)
def test_a_replication_claim_is_refused_then_the_fixed_f_runs_both_ways(server, page):
    page.goto(f"{server}/meshes?lf={GATHER}")
    wait_rendered(page, timeout_ms=120_000)
    main = page.locator(MAIN)
    expect(main).to_contain_text("says the output is the same on every device along model")
    expect(page.get_by_role("button", name="Run your f both ways")).to_have_count(0)
    expect(main).to_contain_text("add to='invarying' to it")
    box = page.get_by_label("Per-device view: f on one device's blocks (jax.shard_map)", exact=True)
    box.fill("lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')")
    box.press("Enter")
    wait_rendered(page)
    expect(main).to_contain_text("Traced by JAX")
    page.get_by_role("button", name="Run your f both ways").click()
    expect(main).to_contain_text("Memory on each device", timeout=120_000)
    expect(page.get_by_text("Agrees with one device.")).to_have_count(2)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "meshes-own-f")


# a long walk (tests/rotation.py): every run opens the settings as shard_map and carries
# the arrays to Meshes in AppTest (tests/features/meshes/ui/test_migration_view.py)
@pytest.mark.rotates(cpu_s=5)
def test_open_as_shard_map_agrees_and_carries_the_arrays_to_meshes(server, page):
    page.goto(f"{server}/explorer?fn=matmul&s0={N},3,5&s1=5,2&a1=None")
    wait_rendered(page, timeout_ms=120_000)
    page.get_by_text("Open as shard_map").click()
    wait_rendered(page)
    page.get_by_role("button", name="Run both on the same values").click()
    expect(page.locator(MAIN)).to_contain_text("They agree", timeout=120_000)
    screenshot(page, "explorer-open-as-shard-map")
    page.get_by_role("button", name="Open these arrays on the Meshes page").click()
    expect(page.locator("h1")).to_contain_text("Meshes & PartitionSpecs", timeout=60_000)
    wait_rendered(page)
    expect(page.get_by_label("Mesh (axis sizes)", exact=True)).to_have_value(str(N))
    expect(
        page.get_by_label(
            "Global view: f on the whole arrays (jax.jit with NamedSharding)", exact=True
        )
    ).to_have_value("x @ w")
    expect(page.locator(MAIN)).to_contain_text(f"x: ({N}, 3, 5) P('i')")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


def test_your_f_survives_a_bad_mesh_that_stopped_the_page_above_it(server, page):
    page.goto(f"{server}/meshes")
    wait_rendered(page, timeout_ms=120_000)
    mesh = page.get_by_label("Mesh (axis sizes)", exact=True)
    mesh.fill("²")
    mesh.press("Enter")
    expect(page.locator(MAIN)).to_contain_text("is not a mesh shape")
    mesh.fill("2x2")
    mesh.press("Enter")
    wait_rendered(page)
    expect(page.get_by_label("f's arguments", exact=True)).to_have_value("x, w")
    expect(
        page.get_by_label(
            "Global view: f on the whole arrays (jax.jit with NamedSharding)", exact=True
        )
    ).to_have_value("x @ w")
    expect(page.locator(MAIN)).to_contain_text("Traced by JAX")
