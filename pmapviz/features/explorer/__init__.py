"""The explorer: shapes and sharding of pmap's settings, its presets and its verdicts."""

from pmapviz.core.base.pageinfo import PageInfo
from pmapviz.core.planning import scenarios

PAGE = PageInfo(
    "pages/explorer.py",
    "Shapes & sharding",
    ":material/grid_view:",
    "explorer",
    "Set shapes, in_axes and out_axes; see how pmap splits them.",
    schemas=lambda n: (scenarios.schema(n),),
)
