"""What JAX could use but does not: the accelerator backends installed, their install lines, why
one could not start, and who holds a chip.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shlex
from collections.abc import Sequence

PLATFORM_NAMES = {"cpu": "CPU", "gpu": "GPU", "tpu": "TPU"}


_PLUGINS = {
    "gpu": ("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_rocm7_plugin"),
    "tpu": ("libtpu",),
}


def backends_installed() -> list[str]:
    """The platforms this JAX installation can start: cpu always, gpu or tpu when their
    plugin is installed (found without importing it)."""
    have = ["cpu"]
    for platform, modules in _PLUGINS.items():
        if any(importlib.util.find_spec(m) is not None for m in modules):
            have.append(platform)
    return have


def accelerators_present() -> list[str]:
    """Accelerators the machine itself shows (device files), whatever JAX can use."""
    found = []
    if glob.glob("/dev/nvidia[0-9]*"):
        found.append("gpu")
    if glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*"):
        found.append("tpu")
    return found


def install_commands(platform: str) -> list[str]:
    """The pip commands that install the accelerator build of the pinned JAX."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        version = "0.10.2"
    if platform == "tpu":
        return [f".venv/bin/pip install 'jax[tpu]=={version}'"]
    return [
        f".venv/bin/pip install 'jax[cuda12]=={version}'  # CUDA 12 driver",
        f".venv/bin/pip install 'jax[cuda13]=={version}'  # CUDA 13 driver",
    ]


def install_advice(platform: str) -> str:
    """How to install the accelerator build of the pinned JAX, in one sentence."""
    return " or ".join(c.split("  #")[0] for c in install_commands(platform))


def accelerator_hints(platform: str, held: Sequence[str] = ()) -> list[str]:
    """A line per accelerator the machine has but this process does not use (``held``: the
    device sets this process has; an accelerator among them is in use, beside the CPU set)."""
    if platform != "cpu":
        return []
    hints = []
    installed = backends_installed()
    for acc in (a for a in accelerators_present() if a not in held):
        name = PLATFORM_NAMES[acc]
        if acc in installed:
            hints.append(
                f"This machine has a {name} and JAX can use it, but this server runs "
                f"on CPU devices (--platform cpu). Restart without it to use the {name}."
            )
        else:
            hints.append(
                f"This machine has a {name}, but this JAX is the CPU-only build. "
                f"Install the accelerator build: {install_advice(acc)}, then restart."
            )
    return hints


_BACKEND = re.compile(r"Unable to initialize backend '([a-z0-9_]+)'")


_BACKEND_PLATFORM = {"cuda": "gpu", "rocm": "gpu", "gpu": "gpu", "tpu": "tpu", "cpu": "cpu"}


_HELD_BY = re.compile(r"in use by process with pid ([0-9]{1,10})")


_JAX_ADVICE = re.compile(r"\s*\((set JAX_PLATFORMS|you may need to uninstall).*$")


def unavailable_message(platform: str, error: BaseException | None = None) -> str:
    """One clear paragraph for a platform JAX cannot start here, naming the platform that
    failed (from JAX's own message where ``platform`` is "auto"). A TPU that another process
    holds gets :func:`held_message` instead: that is no missing installation."""
    said = _JAX_ADVICE.sub("", str(error).splitlines()[0]) if error and str(error) else ""
    failed = _BACKEND.search(said)
    if platform == "auto" and failed:
        platform = _BACKEND_PLATFORM.get(failed.group(1), failed.group(1))
    if held := held_message(said):
        return held
    said = re.sub(r"\s*Run \"?\$? ?sudo rm[^.]*\.?", "", said)  # never relay a harmful fix
    said = "".join(ch if ch.isprintable() else " " for ch in said[:200])
    why = f" (JAX said: {code_span(said)})" if said else ""  # shown as code: no markup forms
    have = ", ".join(backends_installed())
    if platform == "auto":
        return (
            f"JAX cannot start its backend here{why}. Backends this JAX installation has: "
            f"{have}. Start with --platform cpu (emulated CPU devices)."
        )
    name = PLATFORM_NAMES.get(platform, platform.upper())
    files = "/dev/nvidia*" if platform == "gpu" else "/dev/accel*"
    machine = (
        f"this machine does show a {name} ({files})."
        if platform in accelerators_present()
        else f"this machine shows no {name} device files ({files})."
    )
    if platform in backends_installed() and platform not in accelerators_present():
        # e.g. libtpu (the pods extra) on a machine without a chip: installing cannot help
        return (
            f"JAX cannot start the {name} here{why}: its backend is installed, but {machine} "
            f"Run on a machine with a {name}, or start with --platform cpu "
            "(emulated CPU devices)."
        )
    return (
        f"JAX cannot start the {name} here{why}. Backends this JAX installation has: {have}. "
        f"{machine[0].upper()}{machine[1:]} For a {name}, install the accelerator build of "
        f"the pinned JAX: {install_advice(platform)}; or start with --platform cpu (emulated "
        "CPU devices)."
    )


def held_message(said: str) -> str | None:
    """When JAX's message says another process holds the TPU (a chip serves one process at a
    time): one line naming the holder (where JAX does not, the process :func:`tpu_holder`
    finds), with its command line as inline code, and what works beside it; else None.
    libtpu's own advice to delete its lock file is never passed on: the holder is alive."""
    found = _HELD_BY.search(said)
    if found is None and "libtpu_lockfile" not in said:
        return None
    pid = int(found.group(1)) if found else tpu_holder()
    holder = (
        f"process {pid}{_command_of(pid)}"
        if pid
        else "another process (libtpu's lock file is taken)"
    )
    return (
        f"The TPU here is in use by {holder}, and a TPU chip serves one process at a time. "
        "Beside it, run with --platform cpu (emulated CPU devices); if that process is a "
        "pmapviz server, its own pages run on the TPU."
    )


_TPU_FILES = ("/dev/accel", "/dev/vfio/", "/tmp/libtpu_lockfile")


def tpu_holder(proc: str = "/proc") -> int | None:
    """The process (of those this user may read) that has a TPU's device files or libtpu's
    lock file open, when JAX's message does not name it; None when none is found. Read from
    ``/proc/<pid>/fd`` by hand: psutil's ``open_files()`` lists regular files only, never the
    chip's ``/dev/accel*`` or ``/dev/vfio/*`` (and a TPU host is Linux)."""
    me = os.getpid()
    for fd_dir in glob.glob(os.path.join(proc, "[0-9]*", "fd")):
        pid = int(fd_dir.split(os.sep)[-2])
        if pid == me:
            continue
        try:
            links = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:  # another user's process, or one that ended meanwhile
            continue
        if any(link.startswith(_TPU_FILES) for link in links):
            return pid
    return None


COMMAND_LIMIT = 120  # characters of a command line a message shows, then "..."


def _command_of(pid: int) -> str:
    """' (`python3 -c "import jax; ..."`)' for a process this user may read, else '': its
    command line (``psutil.Process(pid).cmdline()``) as :func:`command_text` writes it, as
    inline code (:func:`code_span`), so no Markdown or HTML forms where a page shows it."""
    import psutil

    try:
        words = psutil.Process(pid).cmdline()
    except (psutil.Error, OSError):  # ended meanwhile, or another user's
        return ""
    text = command_text(words)
    return f" ({code_span(text)})" if text else ""


def command_text(words: Sequence[str], limit: int = COMMAND_LIMIT) -> str:
    """A command line as a shell would take it, in one line of at most ``limit`` characters
    and "...": the program's file name, then each argument, quoted where a shell needs it
    ("..." where that is enough). Every printable character is kept; a non-printable one (a
    newline, an escape) shows as '?'."""
    if not words:
        return ""
    shown = [os.path.basename(words[0]) or words[0]]
    for word in words[1:]:
        if shlex.quote(word) == word:
            shown.append(word)
        elif not set(word) & set('"\\$`'):
            shown.append(f'"{word}"')
        else:
            shown.append(shlex.quote(word))
    text = "".join(ch if ch.isprintable() else "?" for ch in " ".join(shown))
    return text if len(text) <= limit else text[:limit] + "..."


def code_span(text: str) -> str:
    """``text`` (one line) as Markdown inline code, whatever backticks it holds: fenced by a
    run of backticks longer than any inside it, with a space inside each fence where it
    begins or ends with one (CommonMark's rule), so it is shown exactly, never as markup."""
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
