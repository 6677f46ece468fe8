"""The app's pages, one record each (:class:`PageInfo`): its file, title, icon, URL path, line
on Home, default device set, the schemas it reads its link through, and the checks run on it.
The menu, app.py's navigation, the page check (``page_check.PAGE_ACTIONS``), the fuzzers and
the hostile links all come from :data:`PAGES`.

It lives at the top because a page's schemas belong to its features (the cluster's, the
tour's), which the ground's :mod:`pmapviz.core.ui.shell` (routing, the last resort) may not import;
it draws nothing (the menu and Home's links: :mod:`pmapviz.app.ui.page_menu`), so the CLI reads
it without importing Streamlit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pmapviz.core.base import settings
from pmapviz.core.devices import deviceset
from pmapviz.core.planning import scenarios
from pmapviz.features.cluster import clusterview
from pmapviz.features.collectives import collectivechoices
from pmapviz.features.compiled import compiledsettings
from pmapviz.features.meshes import meshsettings
from pmapviz.features.timing import sweepsetup
from pmapviz.features.tour import toursteps
from pmapviz.features.training import trainingmodel

Schemas = Callable[[int], tuple[settings.Schema, ...]]  # a page's schemas on n devices

# read by app.py on every page: presenter mode and the device set
APP_KEYS = (settings.PRESENT_KEY, deviceset.URL_KEY)


def _no_settings(n_devices: int) -> tuple[settings.Schema, ...]:
    return ()


def _explorer(n_devices: int) -> tuple[settings.Schema, ...]:
    return (scenarios.schema(n_devices),)


@dataclass(frozen=True)
class PageInfo:
    """One page: its file, title, icon, URL path, line on Home, default device set, the
    schemas its link is read through (``schemas(n)``: every query key it reads, but the app's
    :data:`APP_KEYS`), and the checks the doctor and the tests run on it (``checks``: each a
    query and the buttons pressed in order: the page's main actions, small enough to be
    quick)."""

    path: str
    title: str
    icon: str
    url_path: str
    blurb: str
    runs_on: str = "many"  # its default device set (deviceset.NEEDS): lessons want many
    checks: tuple[tuple[dict, tuple[str, ...]], ...] = (({}, ()),)
    schemas: Schemas = _no_settings

    def keys(self, n_devices: int = 8) -> tuple[str, ...]:
        """Every URL query key the page reads, in its schemas' order (the same on any
        ``n_devices``), without the app's :data:`APP_KEYS`."""
        return tuple(dict.fromkeys(f.key for s in self.schemas(n_devices) for f in s.fields))


PAGES = (
    PageInfo(
        "pages/home.py",
        "Home",
        ":material/home:",
        "home",
        "What pmap does, your devices, and a live hello-pmap.",
    ),
    PageInfo(
        "pages/explorer.py",
        "Shapes & sharding",
        ":material/grid_view:",
        "explorer",
        "Set shapes, in_axes and out_axes; see how pmap splits them.",
        schemas=_explorer,
    ),
    PageInfo(
        "pages/live.py",
        "Live outputs",
        ":material/play_circle:",
        "live",
        "Run pmap on real values, per device, checked against jit(vmap(f)).",
        checks=(({}, ("dot_run",)),),
        schemas=_explorer,
    ),
    PageInfo(
        "pages/collectives.py",
        "Collectives",
        ":material/hub:",
        "collectives",
        "psum, all_gather, ppermute and friends, before and after, per device.",
        schemas=lambda n: (collectivechoices.schema(n),),
    ),
    PageInfo(
        "pages/timing.py",
        "Timing lab",
        ":material/timer:",
        "timing",
        "pmap vs vmap vs shard_map: compile, transfer and compute, and the floor.",
        "real",
        checks=(({"sizes": "64,16384", "r": "3"}, ("tl_go",)),),
        # the sweep (``beside`` where the server holds two sets), and the explorer's settings
        schemas=lambda n: (sweepsetup.schema(n, beside=True), *_explorer(n)),
    ),
    PageInfo(
        "pages/training.py",
        "Data-parallel training",
        ":material/model_training:",
        "training",
        "Sharded batches, replicated parameters, pmean of gradients.",
        checks=(({"steps": "20"}, ("tr_go", "tr_time")),),
        schemas=lambda n: (trainingmodel.schema(n),),
    ),
    PageInfo(
        "pages/cluster.py",
        "Multi-process",
        ":material/lan:",
        "cluster",
        "jax.distributed here or on a real cluster: local versus global devices.",
        checks=(({"p": "2", "d": "1"}, ("cl_go",)),),
        schemas=lambda n: (clusterview.schema(),),
    ),
    PageInfo(
        "pages/compiled.py",
        "Compiled program",
        ":material/memory_alt:",
        "compiled",
        "The collectives XLA really emits, cost and memory, a per-device timeline.",
        checks=(({"src": "collective", "c": "psum"}, ("cp_hidden", "cp_trace")),),
        schemas=lambda n: (compiledsettings.schema(n), *_explorer(n)),
    ),
    PageInfo(
        "pages/meshes.py",
        "Meshes & PartitionSpecs",
        ":material/grid_on:",
        "meshes",
        "Named meshes, PartitionSpecs, and your f with jit and shard_map.",
        checks=(({}, ("me_run",)),),
        schemas=lambda n: (meshsettings.schema(n),),
    ),
    PageInfo(
        "pages/tour.py",
        "Guided tour",
        ":material/school:",
        "tour",
        "A step-by-step workshop path through pmap.",
        checks=(({"step": "1"}, ()), ({"step": "9"}, ("tour_time",))),
        schemas=lambda n: (toursteps.schema(),),
    ),
)


def page_info(path: str) -> PageInfo:
    """The entry of the page in file ``path``."""
    return next(p for p in PAGES if p.path == path)


def by_url_path(url_path: str) -> PageInfo:
    """The page entry ``st.navigation`` chose (its url_path; the default page's is empty)."""
    return next((p for p in PAGES if p.url_path == url_path), PAGES[0])
