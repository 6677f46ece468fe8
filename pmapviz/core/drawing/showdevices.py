"""``pmapviz.devices()``: the devices this Python process has, as JAX reports them, and how many
emulated CPU devices to ask for before JAX starts.

JAX fixes its devices when its backend starts, once per process. In a notebook that is the
kernel: call ``pmapviz.devices(8)`` first, before anything else imports JAX, to have 8 CPU
devices (beside a GPU or TPU chip, which stays the default); once JAX is up, the count is what
it is, and the view says so, with the way to change it (restart the kernel).
"""

from __future__ import annotations

import os

from pmapviz.core.base import valueparse
from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.devices import devicefacts, deviceset, jaxstartup
from pmapviz.core.drawing import gridhtml
from pmapviz.core.drawing.notebookviews import View, paragraph, ready


def _settings(n: int | None, platform: str) -> jaxstartup.Settings:
    lo, hi = jaxstartup.MIN_DEVICES, jaxstartup.MAX_DEVICES
    try:
        count = [] if n is None else ["--devices", str(valueparse.parse_int(n, "devices", lo, hi))]
        argv = ["--platform", str(platform), *count]
        return jaxstartup.parse_settings(argv, os.environ)
    except SettingError as err:
        raise ValueError(str(err)) from None


def _restart_note(n: int, have: int) -> str:
    return (
        f"Asked for {n} CPU devices, but JAX started in this process with {have} before "
        f"pmapviz could set the count (JAX fixes it once per process). Restart the kernel "
        f"and run `pmapviz.devices({n})` before anything else imports JAX."
    )


def devices(n: int | None = None, platform: str = "auto") -> View:
    """The devices of this process: every device set it holds (an accelerator's, and the
    emulated CPU devices beside it), each device's name, id and process as JAX reports them.

    ``n``: emulated CPU devices to ask for (1-64), which takes effect only if JAX has not
    started in this process yet (default: ``PMAPVIZ_DEVICES`` or 8). ``platform``: "auto",
    "cpu", "gpu" or "tpu". Bad values raise ValueError with the valid range.
    """
    settings = _settings(n, platform)
    first_call = n is not None and not jaxstartup.is_applied()
    notes = list(jaxstartup.apply(settings) if first_call else ready())
    cpu = len(deviceset.devices(deviceset.CPU)) if deviceset.CPU in deviceset.names() else 0
    if n is not None and cpu != n:
        notes = [_restart_note(n, cpu)]
    body, lines, sets, rows = [], [], [], []
    for facts in devicefacts.every_set():
        grid, label = gridhtml.device_rows(facts)
        kind = f"{len(facts.devices)} x {facts.device_kind} ({facts.platform})"
        body += [paragraph(kind), gridhtml.block_grid(grid, label)]
        lines.append(kind + ": " + ", ".join(d.label for d in facts.devices))
        sets.append(
            {"platform": facts.platform, "kind": facts.device_kind, "count": len(facts.devices)}
        )
        rows += [
            {"device": d.label, "id": d.id, "process": d.process_index, "platform": d.platform}
            for d in facts.devices
        ]
    first = devicefacts.facts()
    title = f"{len(first.devices)} {first.platform} devices (JAX {first.jax_version})"
    return View(
        title,
        "".join(paragraph(note) for note in notes) + "".join(body),
        "\n".join([*notes, *lines]),
        {"sets": sets, "rows": rows, "notes": notes},
    )
