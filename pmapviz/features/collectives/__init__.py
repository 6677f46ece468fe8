"""The collectives playground: before and after on every device."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.features.collectives import collectivechoices

PAGE = PageInfo(
    page_file("collectives"),
    "Collectives",
    ":material/hub:",
    "collectives",
    "psum, all_gather, ppermute and friends, before and after, per device.",
    schemas=lambda n: (collectivechoices.schema(n),),
)
