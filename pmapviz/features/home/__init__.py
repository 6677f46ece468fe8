"""Hello pmap: the home page's first picture, run for real and read from the output's shards."""

from pmapviz.core.base.pageinfo import PageInfo, page_file

PAGE = PageInfo(
    page_file("home"),
    "Home",
    ":material/home:",
    "home",
    "What pmap does, your devices, and a live hello-pmap.",
)
