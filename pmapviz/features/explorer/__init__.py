"""The explorer: shapes and sharding of pmap's settings, its presets and its verdicts."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.core.planning import scenarios

PAGE = PageInfo(
    page_file("explorer"),
    "Shapes & sharding",
    ":material/grid_view:",
    "explorer",
    "Set shapes, in_axes and out_axes; see how pmap splits them.",
    schemas=lambda n: (scenarios.schema(n),),
)
