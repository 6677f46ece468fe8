"""Two MODELS for what the compiler's estimate leaves out on several slices: the time of the
data-center network, and compute and HBM time where libtpu gives no estimate.

- DCN: each device's bytes over the data-center network (:func:`megascale.bytes_moved`)
  divided by one chip's share of its host's published network bandwidth
  (:attr:`Generation.dcn_chip_bytes_s`: v5e, 2 x 100 Gbps NICs a host of 8 chips, the Cloud
  TPU v5e page), every chip of a host sending at once. The share is the published host's (8
  chips), not libtpu's layout (v5e slices come as 4-chip hosts there; whether such a host has
  the same NICs is not published). No latency, no overlap, no contention with other jobs;
  generations without a published figure get no DCN time, and say so.
- Roofline: where ``cost_analysis()["optimal_seconds"]`` is missing or negative (libtpu 0.0.42
  on multislice programs and on every v6e program), ``max(FLOPs / peak, bytes accessed / HBM
  bandwidth)`` per device against the chip's published peak (bf16 TFLOP/s; f32 runs slower, so
  it is a lower bound) and HBM bandwidth (:mod:`tpuchips`).
"""

from __future__ import annotations

from pmapviz.core.pods.tpuchips import Generation

DCN_MODEL = "DCN bandwidth model (bytes / a chip's share of its host's NICs; no latency)"
ROOFLINE = "roofline estimate (FLOPs / peak bf16, bytes accessed / HBM bandwidth: a lower bound)"


def dcn_seconds(moved: float, gen: Generation) -> tuple[float, str]:
    """(seconds, how) for ``moved`` bytes a device over the data-center network."""
    per_chip = gen.dcn_chip_bytes_s
    if moved <= 0:
        return 0.0, "nothing sent over DCN"
    if per_chip is None:
        return 0.0, f"no published DCN bandwidth for {gen.title} in pmapviz's table: not timed"
    return (
        moved / per_chip,
        f"DCN model: {moved / 2**20:,.1f} MiB at {per_chip / 1e9:.3g} GB/s a chip",
    )


def dcn_words(gen: Generation) -> str:
    """'2 x 100 Gbps a host of 8 chips = 3.1 GB/s a chip (model; source ...)'."""
    per_chip = gen.dcn_chip_bytes_s
    if per_chip is None:
        return f"no published DCN bandwidth for {gen.title}"
    return (
        f"{gen.dcn_host_gbps:g} Gbps a host of {gen.dcn_chips_per_host} chips = "
        f"{per_chip / 1e9:.3g} GB/s a chip (model; {gen.dcn_source})"
    )


def roofline_seconds(
    flops: float | None, bytes_accessed: float | None, gen: Generation
) -> tuple[float | None, str]:
    """(seconds, how) of compute and HBM from the compiler's counts against the chip's peak:
    the larger of the two; None where the compiler counted neither."""
    if not flops and not bytes_accessed:
        return None, "no FLOPs or bytes counted"
    compute = (flops or 0) / (gen.bf16_tflops * 1e12)
    hbm = (bytes_accessed or 0) / (gen.hbm_gbs * 1e9)
    bound = "compute" if compute >= hbm else "HBM"
    return max(compute, hbm), (
        f"{ROOFLINE}: {flops or 0:,.0f} FLOPs / {gen.bf16_tflops:g} TFLOP/s = "
        f"{compute * 1e3:,.3f} ms, {bytes_accessed or 0:,.0f} bytes / {gen.hbm_gbs:,g} GB/s = "
        f"{hbm * 1e3:,.3f} ms; {bound}-bound ({gen.source})"
    )
