"""The Compiled program page: the program picker and profiler timelines."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.core.planning import scenarios
from pmapviz.features.compiled import compiledsettings

PAGE = PageInfo(
    page_file("compiled"),
    "Compiled program",
    ":material/memory_alt:",
    "compiled",
    "The collectives XLA really emits, cost and memory, a per-device timeline.",
    checks=(({"src": "collective", "c": "psum"}, ("cp_hidden", "cp_trace")),),
    schemas=lambda n: (compiledsettings.schema(n), scenarios.schema(n)),
)
