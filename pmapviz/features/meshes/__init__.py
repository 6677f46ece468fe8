"""Named meshes: your own f both ways, and pmap's settings as shard_map."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.features.meshes import meshsettings

PAGE = PageInfo(
    page_file("meshes"),
    "Meshes & PartitionSpecs",
    ":material/grid_on:",
    "meshes",
    "Named meshes, PartitionSpecs, and your f with jit and shard_map.",
    checks=(({}, ("me_run",)),),
    schemas=lambda n: (meshsettings.schema(n),),
)
