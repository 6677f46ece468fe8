"""Named meshes: your own f both ways, and pmap's settings as shard_map."""

from pmapviz.core.base.pageinfo import PageInfo
from pmapviz.features.meshes import meshsettings

PAGE = PageInfo(
    "pages/meshes.py",
    "Meshes & PartitionSpecs",
    ":material/grid_on:",
    "meshes",
    "Named meshes, PartitionSpecs, and your f with jit and shard_map.",
    checks=(({}, ("me_run",)),),
    schemas=lambda n: (meshsettings.schema(n),),
)
