"""The one device palette for the whole app.

Colour-blind-safe: Okabe-Ito's eight hues first, then Paul Tol's muted set, then repeating.
Colour is never the only cue: every chart also writes the device's name on its blocks.
"""

from __future__ import annotations

_COLOURS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#999999",
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#DDCC77",
    "#CC6677",
    "#882255",
)


def device_colour(i: int) -> str:
    """Fill colour for device index ``i`` (position in the device list, not necessarily its id)."""
    return _COLOURS[i % len(_COLOURS)]


def text_colour(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (WCAG relative luminance)."""
    rgb = [int(fill[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#000000" if (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) else "#FFFFFF"


def palette(n: int) -> list[str]:
    """The fill colours of devices 0 to ``n - 1``, in order."""
    return [device_colour(i) for i in range(n)]


FONT = dict(family="Source Sans Pro, Segoe UI, Helvetica, Arial, sans-serif", size=14)
MONO_CSS = "font-family:ui-monospace,Menlo,Consolas,monospace"  # code, slices and shapes in HTML
