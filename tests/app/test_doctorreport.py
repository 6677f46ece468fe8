"""The accelerator check's device sections and report, on this machine's CPU devices: each
section on its own (the whole run, every command and page, is what `python -m pmapviz doctor`
does on a GPU box)."""

import pytest

from pmapviz.app import doctorcommands, doctorreport
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import jaxstartup


def test_facts_and_floor_sections_hold_on_this_machine():
    facts = doctorreport.facts_section()
    assert facts["platform"] == "cpu" and facts["emulated"] and facts["device_memory"] is None
    assert facts["budget_lines"][0].startswith("Memory budget for the whole server")
    floor = doctorreport.floor_section(sizes=(2**10, 2**16))
    assert floor["ok"] and "with XLA" in floor["method"]
    assert [r["size"] for r in floor["rows"]] == [2**10, 2**16]
    assert all(r["floor_over_fastest"] <= doctorreport.FLOOR_SLACK for r in floor["rows"])


def test_the_floor_sizes_split_evenly_on_any_device_count(monkeypatch):
    """`doctor --devices 3` failed its floor: "Size 65,536 does not split evenly over [1, 3]
    devices". Each size is rounded down to a multiple of every count swept."""
    import dataclasses

    from pmapviz.core.devices import devicefacts

    swept = []

    class Swept(Exception):
        pass

    def sweep(wl, sizes, ks, impls, repeat):
        swept.append((sizes, ks))
        raise Swept

    for n, want in ((3, [65_535, 1_048_575]), (5, [65_535, 1_048_575]), (8, [2**16, 2**20])):
        facts = dataclasses.replace(devicefacts.facts(), local_count=n)
        monkeypatch.setattr(doctorreport.devicefacts, "facts", lambda facts=facts: facts)
        monkeypatch.setattr(doctorreport.bench, "sweep", sweep)
        with pytest.raises(Swept):
            doctorreport.floor_section(sizes=(2**16, 2**20))
        assert swept[-1] == (want, [1, n])
        assert all(s % n == 0 for s in swept[-1][0])


def test_transfer_order_and_timeline_sections():
    order = doctorreport.transfer_order_section(pairs=2**12)
    assert set(order["ms"]) == {"pmap then vmap", "vmap then pmap"}
    assert all(v >= 0 for ms in order["ms"].values() for v in ms.values())
    tl = doctorreport.timeline_section()
    assert tl["ok"] and tl["lanes"][0] == "cpu:0" and tl["collectives"]


def test_the_report_reads_as_text_and_fails_on_any_problem():
    report = {
        "seconds": 12.0,
        "ok": True,
        "facts": {
            "summary": "1 NVIDIA H200 GPU",
            "platform": "gpu",
            "device_kind": "H200",
            "jax_version": "0.11.2",
            "startup_s": 1.85,
            "budget_lines": ["**Host** x"],
        },
        "floor": {
            "ok": True,
            "method": "3,900 GB/s, measured on cuda:0",
            "rows": [
                {
                    "size": 2**20,
                    "floor_ms": 0.01,
                    "fastest": "vmap",
                    "fastest_devices": 1,
                    "fastest_ms": 0.09,
                    "floor_over_fastest": 0.11,
                    "pmap_transfer_ms": 3.0,
                    "vmap_transfer_ms": 2.9,
                    "first_transfer_ms": 14.0,
                }
            ],
        },
        "transfer_order": {"pairs": 4, "ms": {"pmap then vmap": {"pmap": 9.0, "vmap": 1.0}}},
        "timeline": {"ok": True, "lanes": ["gpu:0"], "collectives": []},
        "commands": [
            {"command": "dot", "rc": 0, "seconds": 3.0, "stderr": "", "traceback": False},
            {
                "command": "cluster",
                "rc": 0,
                "seconds": 0.0,
                "stderr": "",
                "traceback": False,
                "skipped": "this machine lets no process open a network socket",
            },
        ],
        "beside": {
            "ok": True,
            "names_this_process": False,
            "rc": 2,
            "cpu_rc": 0,
            "said": "pmapviz: The TPU here is in use by another process",
            "cpu_stderr": "",
        },
        "pages": [
            {
                "page": page_file("home"),
                "query": {},
                "exceptions": [],
                "errors": [],
                "cpu_words": [],
            }
        ],
    }
    text = "\n".join(doctorreport.report_lines(report))
    assert "pmapviz doctor: OK" in text and "1 NVIDIA H200 GPU" in text and "**" not in text
    assert (
        "transfers, pmap then vmap (4 pairs, a size not copied before): pmap 9.00 ms, vmap 1.00 ms"
    ) in text
    assert "command cluster  skipped: this machine lets no process open a network" in text
    assert "(JAX did not say which process): pmapviz: The TPU here is in use" in text
    assert doctorreport._all_ok(report)
    report["beside"]["ok"] = False
    assert not doctorreport._all_ok(report)
    report["beside"]["ok"] = True
    report["pages"][0]["cpu_words"] = ["emulated"]
    assert not doctorreport._all_ok(report)
    report["pages"][0]["cpu_words"] = []
    report["commands"][0]["rc"] = 1
    assert not doctorreport._all_ok(report)
    report["commands"][0]["rc"] = 0
    report["timeline"] = {"failed": "RuntimeError: no profiler here"}
    assert not doctorreport._all_ok(report)
    assert "timeline: FAILED RuntimeError: no profiler here" in doctorreport.report_lines(report)


def test_a_check_that_raises_is_reported_and_the_others_still_run(monkeypatch):
    def broken():
        raise RuntimeError("the profiler is missing\nsecond line")

    monkeypatch.setattr(doctorreport, "timeline_section", broken)
    monkeypatch.setattr(
        doctorreport, "floor_section", lambda: {"ok": True, "method": "m", "rows": []}
    )
    monkeypatch.setattr(doctorreport, "transfer_order_section", lambda: {"pairs": 1, "ms": {}})
    monkeypatch.setattr(doctorcommands, "commands_section", lambda settings, progress: [])
    report = doctorreport.run(jaxstartup.applied_settings(), progress=None)
    assert report["timeline"] == {"failed": "RuntimeError: the profiler is missing"}
    assert not report["ok"] and report["pages"] == "skipped" and report["facts"]["platform"]


def test_a_page_check_the_cli_hands_over_runs_or_its_absence_is_said(monkeypatch):
    """The device machine has JAX but no Streamlit: the CLI hands over
    doctorcommands.NO_STREAMLIT and the doctor checks the rest; with Streamlit it hands over
    ui.page_check.section."""
    monkeypatch.setattr(doctorreport, "timeline_section", lambda: {"ok": True})
    monkeypatch.setattr(
        doctorreport, "floor_section", lambda: {"ok": True, "method": "m", "rows": []}
    )
    monkeypatch.setattr(doctorreport, "transfer_order_section", lambda: {"pairs": 1, "ms": {}})
    monkeypatch.setattr(doctorcommands, "commands_section", lambda settings, progress: [])
    settings = jaxstartup.applied_settings()
    report = doctorreport.run(settings, progress=None, pages=doctorcommands.NO_STREAMLIT)
    assert report["pages"].startswith("Streamlit is not installed")
    rows = [{"page": "p", "exceptions": [], "errors": [], "cpu_words": []}]
    assert doctorreport.run(settings, progress=None, pages=lambda s, p: rows)["pages"] == rows
