"""The accelerator check, on this machine's CPU devices: each section on its own (the whole
run, every command and page, is what `python -m pmapviz doctor` does on a GPU box)."""

import pytest

from pmapviz.app import doctor
from pmapviz.core.devices import jaxstartup


def test_facts_and_floor_sections_hold_on_this_machine():
    facts = doctor.facts_section()
    assert facts["platform"] == "cpu" and facts["emulated"] and facts["device_memory"] is None
    assert facts["budget_lines"][0].startswith("Memory budget for the whole server")
    floor = doctor.floor_section(sizes=(2**10, 2**16))
    assert floor["ok"] and "with XLA" in floor["method"]
    assert [r["size"] for r in floor["rows"]] == [2**10, 2**16]
    assert all(r["floor_over_fastest"] <= doctor.FLOOR_SLACK for r in floor["rows"])


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
        monkeypatch.setattr(doctor.devicefacts, "facts", lambda facts=facts: facts)
        monkeypatch.setattr(doctor.bench, "sweep", sweep)
        with pytest.raises(Swept):
            doctor.floor_section(sizes=(2**16, 2**20))
        assert swept[-1] == (want, [1, n])
        assert all(s % n == 0 for s in swept[-1][0])


def test_transfer_order_and_timeline_sections():
    order = doctor.transfer_order_section(pairs=2**12)
    assert set(order["ms"]) == {"pmap then vmap", "vmap then pmap"}
    assert all(v >= 0 for ms in order["ms"].values() for v in ms.values())
    tl = doctor.timeline_section()
    assert tl["ok"] and tl["lanes"][0] == "cpu:0" and tl["collectives"]


def test_commands_cover_every_cli_command():
    from pmapviz.app import cli

    settings = jaxstartup.applied_settings()
    names = {c[0] for c in doctor.command_lines(settings, "/tmp/trace")}
    assert names == set(cli.COMMANDS) - {"doctor"}
    flags = doctor.device_flags(
        jaxstartup.Settings(devices=4, platform="cpu", devices_source="flag", max_bytes=2**30)
    )
    assert flags == ["--devices", "4", "--platform", "cpu", "--max-bytes", str(2**30)]
    assert doctor.device_flags(jaxstartup.Settings()) == []  # from the environment, as given


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
            {"page": "pages/home.py", "query": {}, "exceptions": [], "errors": [], "cpu_words": []}
        ],
    }
    text = "\n".join(doctor.report_lines(report))
    assert "pmapviz doctor: OK" in text and "1 NVIDIA H200 GPU" in text and "**" not in text
    assert (
        "transfers, pmap then vmap (4 pairs, a size not copied before): pmap 9.00 ms, vmap 1.00 ms"
    ) in text
    assert "command cluster  skipped: this machine lets no process open a network" in text
    assert "(JAX did not say which process): pmapviz: The TPU here is in use" in text
    assert doctor._all_ok(report)
    report["beside"]["ok"] = False
    assert not doctor._all_ok(report)
    report["beside"]["ok"] = True
    report["pages"][0]["cpu_words"] = ["emulated"]
    assert not doctor._all_ok(report)
    report["pages"][0]["cpu_words"] = []
    report["commands"][0]["rc"] = 1
    assert not doctor._all_ok(report)
    report["commands"][0]["rc"] = 0
    report["timeline"] = {"failed": "RuntimeError: no profiler here"}
    assert not doctor._all_ok(report)
    assert "timeline: FAILED RuntimeError: no profiler here" in doctor.report_lines(report)


def test_a_check_that_raises_is_reported_and_the_others_still_run(monkeypatch):
    def broken():
        raise RuntimeError("the profiler is missing\nsecond line")

    monkeypatch.setattr(doctor, "timeline_section", broken)
    monkeypatch.setattr(doctor, "floor_section", lambda: {"ok": True, "method": "m", "rows": []})
    monkeypatch.setattr(doctor, "transfer_order_section", lambda: {"pairs": 1, "ms": {}})
    monkeypatch.setattr(doctor, "commands_section", lambda settings, progress: [])
    report = doctor.run(jaxstartup.applied_settings(), progress=None)
    assert report["timeline"] == {"failed": "RuntimeError: the profiler is missing"}
    assert not report["ok"] and report["pages"] == "skipped" and report["facts"]["platform"]


def test_a_page_check_the_cli_hands_over_runs_or_its_absence_is_said(monkeypatch):
    """The device machine has JAX but no Streamlit: the CLI hands over doctor.NO_STREAMLIT
    and doctor checks the rest; with Streamlit it hands over ui.page_check.section."""
    monkeypatch.setattr(doctor, "timeline_section", lambda: {"ok": True})
    monkeypatch.setattr(doctor, "floor_section", lambda: {"ok": True, "method": "m", "rows": []})
    monkeypatch.setattr(doctor, "transfer_order_section", lambda: {"pairs": 1, "ms": {}})
    monkeypatch.setattr(doctor, "commands_section", lambda settings, progress: [])
    settings = jaxstartup.applied_settings()
    report = doctor.run(settings, progress=None, pages=doctor.NO_STREAMLIT)
    assert report["pages"].startswith("Streamlit is not installed")
    rows = [{"page": "p", "exceptions": [], "errors": [], "cpu_words": []}]
    assert doctor.run(settings, progress=None, pages=lambda s, p: rows)["pages"] == rows


def test_a_command_this_machine_forbids_is_skipped_with_its_own_words(monkeypatch):
    """The cluster command exits 3 where no socket may open (cluster.NoSockets): the doctor
    reads that exit and the command's own line, rather than deciding the rule itself."""
    from pmapviz.core.devices import jaxstartup
    from pmapviz.features.cluster import cluster

    said = "pmapviz: No local cluster here: this machine lets no process open a network socket"

    def fake_run(argv):
        if argv[0] == "cluster":
            return cluster.EXIT_NO_SOCKETS, "", said + "\n"
        return 0, "", ""

    monkeypatch.setattr(doctor, "in_subprocess", fake_run)
    rows = doctor.commands_section(jaxstartup.parse_settings(["--devices", "4"], {}))
    by = {r["command"]: r for r in rows}
    assert by["cluster"]["skipped"].startswith("No local cluster here")
    assert by["cluster"]["rc"] == 0 and all(r["rc"] == 0 for r in rows)
    monkeypatch.setattr(doctor, "in_subprocess", lambda argv: (1, "", "pmapviz: broke\n"))
    assert all(
        "skipped" not in r
        for r in doctor.commands_section(jaxstartup.parse_settings(["--devices", "4"], {}))
    )


def test_the_doctor_finds_the_repository_it_checks():
    """Its ROOT is the folder holding app.py and pages/ (it moved a package down once)."""
    assert (doctor.ROOT / "app.py").is_file() and (doctor.ROOT / "pages").is_dir()
