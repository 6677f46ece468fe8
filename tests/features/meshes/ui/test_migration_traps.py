"""The migration's traps: closed, nothing runs; open, a button; on the explorer page (from a
link), the button runs every trap and shows each one's result, JAX's words in code blocks."""

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.planning.scenarios import Scenario
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render
from tests.pages.conftest import open_link

N = TEST_DEVICES
QUERY = {"fn": "matmul", "s0": f"{N}, 3, 5", "s1": "5, 2", "a1": "None"}


def _view(program, plan):
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.meshes.ui import migration_traps

    migration_traps.show(program, plan, device_report())


def _settings(n=N, **changes):
    program, plan, errors = Scenario.from_texts({**QUERY, **changes}, n).plan(n)
    assert not errors and plan.ok, (errors, plan.problems)
    return program, plan


def test_closed_nothing_is_drawn_and_open_it_waits_for_the_button():
    at = render(_view, *_settings())
    assert not at.exception and len(at.expander) == 1 and not at.button and not at.code
    at = render(_view, *_settings(), state={"ex_tr_open": True})
    assert not at.exception and at.button(key="ex_tr_run").label == "Run the traps"
    assert "docs/migrate_pmap.md" in at.markdown[0].value and not at.code


def test_settings_for_more_devices_than_here_say_so_instead_of_running():
    at = render(_view, *_settings(2 * N, s0=f"{2 * N}, 3, 5"), state={"ex_tr_open": True})
    assert not at.exception and not at.button
    assert f"Planned for {2 * N} devices; this server has {N}" in at.info[0].value


def test_from_a_link_the_explorer_runs_every_trap_and_shows_jaxs_words(monkeypatch):
    at = open_link(monkeypatch, page_file("explorer"), QUERY)
    at.session_state["ex_tr_open"] = True
    at.run()
    at.button(key="ex_tr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    heads = [m.value for m in at.markdown if m.value.startswith("**")]
    for k, title in enumerate(
        [
            "out[0] of a split output talks to every device",
            "out_axes=None is not checked by pmap",
            "Nested pmap no longer works",
            "device_put_replicated, device_put_sharded and PmapSharding",
            "Host-local and global arrays across processes",
        ],
        start=1,
    ):
        assert f"**{k}. {title}**" in heads
    codes = [c.value for c in at.code]
    assert any("should match the mesh passed to shard_map" in c for c in codes)
    assert any("jax.device_put_replicated is deprecated" in c for c in codes)
    assert any(f"all-reduce over all {N} devices" in m.value for m in at.markdown)
    (link,) = [p for p in at.get("page_link") if p.proto.label.startswith("Multi-process: real")]
    assert "cluster" in link.proto.page
