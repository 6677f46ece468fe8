"""``pmapviz pod``: one line with a fix for bad flags, and the sweep's sublinear curve as JSON."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def pod(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pmapviz", "pod", *argv],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=300,
    )


def test_bad_flags_get_one_line_with_a_fix_and_no_traceback():
    for argv, words in (
        (["--topology", "v9:2x2"], "v4, v5e, v5p, v6e"),
        (["--topology", "v5e:2x2x2"], "2-D"),
        (["--topology", "v5e:1x1"], "pick 2 to 256"),
        (["--topology", "v5e-12"], "the nearest: v5e-8 = v5e:2x4, v5e-16 = v5e:4x4"),
        (["--program", "f"], "--program f needs --f and --mesh"),
        (
            ["--program", "f", "--f", "x @ w", "--mesh", "2x2", "--topology", "v5e:2x4"]
            + ["--shape", "8,8", "--spec", "data,None", "--shape", "8,8", "--spec", "None,model"],
            "has 4 devices and v5e:2x4 has 8",
        ),
        (["--topology", "99x v5e:16x16"], "joins 99 slices; pmapviz compiles 1 to 64"),
        (["--topology", "v5e:2x2", "--hosts", "8"], "does not divide into 8-chip hosts"),
        (["--topology", "v5p:2x2x2", "--hosts", "<b>8</b>"], "not a host TPU v5p is rented as"),
        (["--topology", "v5e:4x4", "--slices", "1,2,10**30"], "--slices value"),
        (  # several slices: --mesh is one slice's ('dcn' is added), in the user's numbers
            ["--program", "f", "--f", "x @ w", "--mesh", "2x8", "--topology", "2 x v5e:2x4"]
            + ["--shape", "8,8", "--spec", "data,None", "--shape", "8,8", "--spec", "None,model"],
            "has 16 devices and one slice of 2 x v5e:2x4 has 8",
        ),
        (
            ["--program", "f", "--f", "x @ w", "--mesh", "2x4", "--topology", "2 x v5e:2x4"]
            + ["--shape", "6,8", "--spec", "data,None", "--shape", "8,8", "--spec", "None,model"],
            "over 'dcn' too: 4 ways, which does not divide 6",
        ),
        (
            ["--program", "f", "--f", "x @ w", "--mesh", "2x4", "--topology", "2 x v5e:2x4"]
            + ["--axis-names", "dcn, model", "--shape", "8,8", "--spec", "dcn,None"]
            + ["--shape", "8,8", "--spec", "None,model"],
            "names an axis 'dcn', the axis the compile adds across 2 slices",
        ),
    ):
        out = pod(*argv)
        assert out.returncode == 2, (argv, out.stderr)
        assert words in out.stderr and "Traceback" not in out.stderr, (argv, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_cloud_accelerator_type_compiles_as_the_slice_it_names_and_says_which():
    out = pod("--topology", "v5litepod-4", "--program", "psum", "--json")
    assert out.returncode == 0, out.stderr[-1500:]
    assert out.stderr.strip() == "pmapviz: --topology v5litepod-4 = v5e:2x2"
    data = json.loads(out.stdout)
    assert data["topology"] == "v5e:2x2" and data["n_devices"] == 4


def test_the_sweep_lines_name_each_sizes_links_and_where_they_switch():
    from types import SimpleNamespace

    from pmapviz.features.pods import cmd_pod

    def row(topology, chips, comm_s, links, axes):
        return {
            "topology": topology,
            "chips": chips,
            "compute_hbm_s": 1e-3,
            "communication_s": comm_s,
            "total_s": 1e-3 + comm_s,
            "speedup": 1.0,
            "fits": True,
            "collective": "all-reduce",
            "links": links,
            "link_axes": axes,
            "changes": [],
        }

    rows = [
        row("v5e:8x8", 64, 1.321e-3, 2, ("line", "line")),
        row("v5e:8x16", 128, 0.888e-3, 3, ("line", "ring")),
        row("v5e:16x16", 256, 0.668e-3, 4, ("ring", "ring")),
    ]
    lines = cmd_pod._sweep_lines(SimpleNamespace(asked_text=lambda: "my step"), rows)
    assert lines[1].endswith("speed-up  links (model)")
    assert [line.split("x  ")[-1] for line in lines[2:5]] == [
        "line x line (2 links)",
        "line x ring (3 links)",
        "ring x ring (4 links)",
    ]
    assert lines[-2].startswith("From v5e:8x8 to v5e:8x16, axis 1 closes into a ring")
    assert "3 links instead of 2, and communication falls from 1.321 ms to 0.888 ms." in lines[-2]
    assert lines[-1].startswith("From v5e:8x16 to v5e:16x16, axis 0 closes into a ring")
    assert "from 0.888 ms to 0.668 ms." in lines[-1]


# a long walk (tests/rotation.py): every run sweeps the slices in AppTest
# (tests/features/pods/ui/test_pods_form.py) and in the engine (tests/core/pods/test_podsweep.py)
@pytest.mark.rotates(cpu_s=19)
def test_the_sweep_gives_the_sublinear_curve_as_json_and_nothing_on_stderr():
    """The training step on 4, 8 and 16 v5e chips (the full 4-256 sweep is the same loop):
    the compiler's estimate falls with each doubling, but by less than half (the seed's
    sublinear scaling), and no libtpu line."""
    out = pod("--sweep", "--program", "train", "--max-chips", "16", "--json")
    assert out.returncode == 0, out.stderr[-1500:]
    assert out.stderr == "", out.stderr[:500]
    data = json.loads(out.stdout)
    rows = data["sizes"]
    chips = [r["chips"] for r in rows]
    assert chips == sorted(chips) and chips == [4, 8, 16]
    est = [r["compute_hbm_s"] for r in rows]
    for k in range(len(rows) - 1):
        a, b, n_a, n_b = est[k], est[k + 1], chips[k], chips[k + 1]
        assert b < a, f"the estimate did not fall from {n_a} to {n_b} chips: {est}"
        assert b > a * n_a / n_b, f"{n_a} -> {n_b} chips scaled linearly or better: {est}"
    assert all(r["communication_s"] > 0 for r in rows)  # the gradient's all-reduce, modelled
    assert rows[0]["speedup"] == 1.0 and 1.0 < rows[-1]["speedup"] < 4
    assert [r["topology"] for r in data["reports"]] == [r["topology"] for r in rows]


# a long walk (tests/rotation.py): every run compiles 1 and 2 slices in the engine
# (tests/core/pods/test_podsweep.py) and 2 x v5e:2x4 through the CLI (test_podcompile.py)
@pytest.mark.rotates(cpu_s=10)
def test_the_slice_sweep_shows_where_dcn_grows_as_json_and_as_a_table():
    """1, 2, 4 and 8 slices of v5e:4x4, the training step: chips and hosts grow with the
    slices, each device's DCN bytes are 2 (S-1)/S of what it sends, and the table's rows and
    its DCN line are written from the same rows."""
    out = pod("--topology", "v5e:4x4", "--slices", "1,2,4,8", "--program", "train", "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr[-1500:]
    data = json.loads(out.stdout)
    rows = data["slices"]
    assert [r["slices"] for r in rows] == [1, 2, 4, 8]
    assert [r["chips"] for r in rows] == [16, 32, 64, 128]
    assert [r["hosts"] for r in rows] == [4, 8, 16, 32]
    sent = [r["dcn_bytes"] for r in rows]
    assert sent[0] == 0 and sent[1] < sent[2] < sent[3]
    per = sent[1]  # 2 slices: 2 (2-1)/2 = 1x the send's bytes
    assert sent[2] == 1.5 * per and sent[3] == 1.75 * per  # the send's bytes stay 1/16 of w
    assert data["dcn_dominates"].startswith("From ")
    from pmapviz.features.pods import cmd_pod

    lines = cmd_pod._slice_lines(
        type("P", (), {"asked_text": lambda self: data["program"]})(),
        [type("R", (), {"dcn_how": r["dcn_how"]})() for r in data["reports"]],
        rows,
    )
    assert lines[-2] == data["dcn_dominates"] and lines[-1].startswith("DCN: 200 Gbps a host")


def test_hosts_as_rented_change_the_hosts_and_the_crossing_marks():
    """--hosts 8: v5e:2x4 as one 8-chip host (Cloud's ct5lp-hightpu-8t): one host, and the
    training step's all-reduce crosses none (tests/core/pods/test_podcompile.py checks both
    layouts against libtpu's own chips_per_host_bounds)."""
    out = pod("--topology", "v5e:2x4", "--hosts", "8", "--program", "train", "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr[-1500:]
    data = json.loads(out.stdout)
    assert data["topology"] == "v5e:2x4 on 8-chip hosts" and data["n_hosts"] == 1
    assert "as ct5lp-hightpu-8t" in data["summary"]
    assert [c["crossing"] for c in data["collectives"]] == [0] * len(data["collectives"])
