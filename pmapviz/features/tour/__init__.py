"""The guided tour: eleven steps over every feature (the last: it may use all the others)."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.features.tour import toursteps

PAGE = PageInfo(
    page_file("tour"),
    "Guided tour",
    ":material/school:",
    "tour",
    "A step-by-step workshop path through pmap.",
    checks=(({"step": "1"}, ()), ({"step": "9"}, ("tour_time",))),
    schemas=lambda n: (toursteps.schema(),),
)
