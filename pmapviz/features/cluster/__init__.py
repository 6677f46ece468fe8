"""Multi-process: a local jax.distributed cluster, real clusters' launch lines and reports."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.features.cluster import clustersettings

PAGE = PageInfo(
    page_file("cluster"),
    "Multi-process",
    ":material/lan:",
    "cluster",
    "jax.distributed here or on a real cluster: local versus global devices.",
    checks=(({"p": "2", "d": "1"}, ("cl_go",)),),
    schemas=lambda n: (clustersettings.schema(),),
)
