"""A TPU slice this machine does not have, as libtpu describes it: devices, their coordinates
and hosts; whether this machine can compile for a pod and, if not, the one line that says why;
a refused name as PodUnavailable; and libtpu's start-up chatter kept off the terminal."""

import importlib.util
import os
import platform
import subprocess
import sys
import textwrap

import pytest

from pmapviz.core.pods import podtopology
from pmapviz.core.pods.podtopology import PodUnavailable
from tests.conftest import ROOT


def test_this_linux_x86_machine_with_libtpu_can_compile_for_pods():
    assert podtopology.availability().ok
    assert podtopology.availability().why == ""


def test_another_platform_is_told_libtpu_ships_for_linux_x86_64_only(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    have = podtopology.availability()
    assert not have.ok
    assert "Linux x86_64 only" in have.why
    assert "darwin arm64" in have.why  # says what this machine is


def test_linux_on_arm_is_refused_too(monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    have = podtopology.availability()
    assert not have.ok and "aarch64" in have.why


def test_without_libtpu_the_reason_is_the_install_line(monkeypatch):
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == "libtpu" else found(name, *a, **k),
    )
    have = podtopology.availability()
    assert not have.ok
    assert podtopology.INSTALL in have.why and "pip install" in have.why
    with pytest.raises(PodUnavailable) as err:  # and load says so, before its cache
        podtopology.load("v5e:2x4")
    assert podtopology.INSTALL in str(err.value)


def test_v5e_2x4_is_8_chips_on_2_hosts_at_distinct_coordinates():
    pod = podtopology.load("v5e:2x4")
    assert pod.name == "v5e:2x4"
    assert (pod.n_devices, pod.n_chips, pod.n_hosts, pod.devices_per_chip) == (8, 8, 2, 1)
    assert len(pod.devices) == 8
    assert sorted(c.id for c in pod.chips) == sorted(int(d.id) for d in pod.devices)
    coords = {c.coords for c in pod.chips}
    assert coords == {(x, y, 0) for x in range(2) for y in range(4)}
    assert {c.core for c in pod.chips} == {0}
    for host in (0, 1):  # each host holds half the chips
        assert sum(c.host == host for c in pod.chips) == 4
    assert pod.summary().startswith("v5e:2x4: 8 chips on 2 hosts (TPU v5e, 16 GiB HBM")
    assert podtopology.load("v5e:2x4") is pod  # loaded once, kept


def test_v4_2x2x2_has_two_devices_a_chip():
    pod = podtopology.load("v4:2x2x2")
    assert (pod.n_devices, pod.n_chips, pod.devices_per_chip) == (16, 8, 2)
    for coords in {c.coords for c in pod.chips}:
        cores = sorted(c.core for c in pod.chips if c.coords == coords)
        assert cores == [0, 1], coords
    assert "2 devices a chip" in pod.summary()
    assert {len(c.coords) for c in pod.chips} == {3}


@pytest.mark.parametrize(("name", "said"), [("v5e", "topology name"), ("v5e:3x3", "v5e:3x3")])
def test_a_bad_or_refused_name_raises_pod_unavailable(name, said):
    with pytest.raises(PodUnavailable) as err:
        podtopology.load(name)
    assert said in str(err.value)


def test_libtpu_start_up_notes_are_kept_off_the_terminal():
    script = textwrap.dedent(
        """
        from pmapviz.core.pods import podtopology
        pod = podtopology.load("v5e:2x2")
        print(pod.n_devices, len(podtopology.load_notes()))
        """
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    devices, notes = map(int, out.stdout.split())
    assert devices == 4
    assert notes > 0  # libtpu said something as it loaded...
    assert out.stderr == ""  # ...and none of it reached stderr


def test_several_slices_load_only_where_the_caller_takes_them():
    """A page's target stays one slice: the multislice name is refused before libtpu loads,
    with the one line that says where it compiles."""
    with pytest.raises(
        podtopology.PodUnavailable, match="this page compiles for one slice; pick one, e.g. v5e:2x4"
    ):
        podtopology.load("2 x v5e:2x4")
    with pytest.raises(podtopology.PodUnavailable, match="joins 99 slices"):
        podtopology.load("99x v5e:2x4", multislice=True)
