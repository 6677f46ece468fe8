"""JAX's persistent compilation cache: its folder as typed, on by default, off on request, and a
second process compiling the same program reads it from disk."""

import os
import subprocess
import sys

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.devices import compilecache, jaxstartup
from tests.conftest import ROOT


def test_the_folder_is_per_user_on_by_default_and_off_on_request(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert compilecache.parse(None, "--compile-cache", env) == str(tmp_path / "pmapviz" / "jax")
    assert compilecache.parse("", "--compile-cache", {}).endswith(".cache/pmapviz/jax")
    for off in ("off", "OFF", "none", "0"):
        assert compilecache.parse(off, "--compile-cache", env) is None
    assert compilecache.parse(str(tmp_path / "new"), "--compile-cache", env) == str(
        tmp_path / "new"
    )


def test_a_file_or_a_control_character_is_refused_in_words(tmp_path):
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    with pytest.raises(SettingError, match="is a file: name a folder"):
        compilecache.parse(str(a_file), "--compile-cache")
    with pytest.raises(SettingError, match="is not a path"):
        compilecache.parse("a\x00b", "PMAPVIZ_COMPILE_CACHE=")


def test_the_setting_comes_from_the_flag_then_the_environment(tmp_path):
    env = {compilecache.ENV: "off"}
    assert jaxstartup.parse_settings([], env).compile_cache is None
    flag = jaxstartup.parse_settings(["--compile-cache", str(tmp_path)], env)
    assert flag.compile_cache == str(tmp_path)
    with pytest.raises(SettingError, match="--compile-cache"):
        jaxstartup.parse_settings(["--compile-cache"], {})


def test_an_unmakeable_folder_leaves_the_cache_off_with_a_note(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    note = compilecache.enable(str(a_file / "sub"))
    assert note and "cannot be made" in note


PROGRAM = """
import sys, time
from pmapviz.core.devices import jaxstartup
jaxstartup.apply(jaxstartup.parse_settings(sys.argv[1:], {}))
import jax, jax.numpy as jnp
from pmapviz.core.devices import compilecache
f = jax.pmap(lambda x: jax.lax.psum(jnp.tanh(x) @ x.T, 'i'), axis_name='i')
f.lower(jax.ShapeDtypeStruct((2, 32, 32), jnp.float32)).compile()
print(compilecache.folder_in_use())
"""


def test_a_second_process_reads_the_program_the_first_compiled(tmp_path):
    folder = tmp_path / "cache"
    argv = [sys.executable, "-c", PROGRAM, "--devices", "2", "--compile-cache", str(folder)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == str(folder)
    kept = sorted(p.name for p in folder.iterdir())
    assert kept, "nothing was written to the cache"
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in folder.iterdir()) == kept  # read, not compiled and written
    off = [*argv[:-2], "--compile-cache", "off"]
    third = subprocess.run(off, capture_output=True, text=True, env=env, timeout=120)
    assert third.stdout.strip() == "None"


FRESH = """
import os, sys, time
from pmapviz.core.devices import jaxstartup
jaxstartup.apply(jaxstartup.parse_settings(sys.argv[1:], {}))
import jax, jax.numpy as jnp
from pmapviz.core.devices import compilecache

def f(x):
    return x * 2 + 1

spec = jax.ShapeDtypeStruct((2, 4096), jnp.float32)
jax.pmap(f).lower(spec).compile()  # kept: the cache's first entry
kept = len(os.listdir(sys.argv[-1]))
times = []
for _ in range(3):
    with compilecache.kept_out():
        t = time.perf_counter()
        jax.pmap(compilecache.renamed(f)).lower(spec).compile()
        times.append(time.perf_counter() - t)
print(kept, len(os.listdir(sys.argv[-1])), min(times))
"""


def test_a_renamed_program_is_compiled_afresh_and_not_kept(tmp_path):
    """The Timing lab's programs: each a compile (not a read of the entry the same program
    left), and none kept in the cache."""
    argv = [sys.executable, "-c", FRESH, "--devices", "2", "--compile-cache", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    kept, after, fastest = done.stdout.split()
    assert int(kept) >= 1 and after == kept  # the renamed ones were not written
    names = {compilecache.renamed(len).__name__ for _ in range(3)}
    assert len(names) == 3 and all(n.startswith("len_fresh") for n in names)
