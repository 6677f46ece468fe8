"""Pods you don't have: a program compiled by the real TPU compiler for a TPU slice, and one
program swept from 4 to 256 chips."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.features.pods import podsettings

PAGE = PageInfo(
    page_file("pods"),
    "Pods you don't have",
    ":material/dns:",
    "pods",
    "Your program compiled for a TPU slice of 4 to 256 chips, from this machine.",
    schemas=lambda n: (podsettings.schema(n),),
)
