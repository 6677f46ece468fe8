"""The Timing lab: pmap, shard_map and NamedSharding against vmap and the floor."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.core.planning import scenarios
from pmapviz.features.timing import sweepsetup

PAGE = PageInfo(
    page_file("timing"),
    "Timing lab",
    ":material/timer:",
    "timing",
    "pmap vs vmap vs shard_map: compile, transfer and compute, and the floor.",
    "real",
    checks=(({"sizes": "64,16384", "r": "3"}, ("tl_go",)),),
    # the sweep (``beside`` where the server holds two sets), and the explorer's settings
    schemas=lambda n: (sweepsetup.schema(n, beside=True), scenarios.schema(n)),
)
