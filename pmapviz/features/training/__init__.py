"""Data-parallel training: the page's form and its loss curves."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.features.training import trainingmodel

PAGE = PageInfo(
    page_file("training"),
    "Data-parallel training",
    ":material/model_training:",
    "training",
    "Sharded batches, replicated parameters, pmean of gradients.",
    checks=(({"steps": "20"}, ("tr_go", "tr_time")),),
    schemas=lambda n: (trainingmodel.schema(n),),
)
