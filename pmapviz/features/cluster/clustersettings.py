"""The Multi-process page's settings: the launch on this machine (its limits) and the launch
lines' cluster, as a URL schema. Light on purpose: the feature's package imports it for its
page record, and every worker process imports the package."""

from __future__ import annotations

from pmapviz.core.base import settings
from pmapviz.features.cluster import clusterreport, launchlines

MIN_PROCESSES, MAX_PROCESSES = 2, 4  # a launch on this machine
MIN_LOCAL, MAX_LOCAL = 1, 4  # emulated CPU devices per process


def schema() -> settings.Schema:
    """The Multi-process page's settings: p (processes), d (CPU devices per process) of the
    launch on this machine; report (a report's path inside the reports folder); nodes, ppn
    (processes per node), dpp (devices per process) and kind (gpu, cpu) of the launch lines."""
    s = settings
    return s.Schema(
        (
            s.choice_field(
                "p",
                "Processes",
                tuple(str(v) for v in range(MIN_PROCESSES, MAX_PROCESSES + 1)),
                "2",
            ),
            s.choice_field(
                "d",
                "CPU devices per process",
                tuple(str(v) for v in range(MIN_LOCAL, MAX_LOCAL + 1)),
                "2",
            ),
            s.text_field("report", "Report path", "", max_len=clusterreport.MAX_NAME),
            s.int_field("nodes", "Nodes", 1, launchlines.MAX_NODES, 2),
            s.int_field("ppn", "Processes per node", 1, launchlines.MAX_PER_NODE, 4),
            s.int_field("dpp", "Devices per process", 1, launchlines.MAX_DEVICES, 1),
            s.choice_field("kind", "Device kind", launchlines.KINDS, "gpu"),
        )
    )
