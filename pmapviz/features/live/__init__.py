"""Live outputs: the explorer's settings run for real, and the seed's 10M-pair example."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.core.planning import scenarios

PAGE = PageInfo(
    page_file("live"),
    "Live outputs",
    ":material/play_circle:",
    "live",
    "Run pmap on real values, per device, checked against jit(vmap(f)).",
    checks=(({}, ("dot_run",)),),
    schemas=lambda n: (scenarios.schema(n),),
)
