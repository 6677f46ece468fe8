"""The seed's example on n devices: 10,000,000 pairs of 3-vectors, split into one block a device.

pmap gives every device the same block, so the pairs must split evenly: on n devices the example
takes the largest multiple of n pairs up to 10,000,000 (all of them where n divides 10,000,000;
the first 9,999,999 on 3 devices, as the Live page's example runs it, which refuses any other
count) and reshapes ``(pairs, 3)`` to ``(n, pairs // n, 3)``. Every page that speaks of the seed
on n devices (Home, the explorer's preset, the Live example, the tour) writes its numbers and
words from :func:`split`, so the label and the figure come from one object;
tests/core/planning/test_seedpairs.py checks the shapes against ``jax.eval_shape`` of the
reshape and of ``pmap(vmap(dot))`` on real devices.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmapviz.core.base.valuetext import fmt_shape

SEED_PAIRS = 10_000_000  # the seed's pairs of 3-vectors (the Live page's default)
VECTOR = 3  # each pair is two 3-vectors


@dataclass(frozen=True)
class SeedSplit:
    """``pairs`` pairs over ``devices`` devices: the block each gets and the pairs used."""

    pairs: int  # asked: the seed's 10,000,000 unless said otherwise
    devices: int

    @property
    def block(self) -> int:
        """Pairs on each device."""
        return self.pairs // self.devices

    @property
    def used(self) -> int:
        """Pairs the split takes: the largest multiple of ``devices`` up to ``pairs``."""
        return self.block * self.devices

    @property
    def left_over(self) -> int:
        """Pairs the split leaves out (0 where ``devices`` divides ``pairs``)."""
        return self.pairs - self.used

    @property
    def flat(self) -> tuple[int, int]:
        """The inputs before the reshape: ``(used, 3)``."""
        return (self.used, VECTOR)

    @property
    def blocked(self) -> tuple[int, int, int]:
        """The inputs pmap maps: ``(devices, block, 3)``."""
        return (self.devices, self.block, VECTOR)

    def reshape_words(self) -> str:
        """What to do with the seed's inputs on these devices, in their numbers (markdown):
        the reshape, and first the pairs left out where the devices do not divide them."""
        reshape = f"reshape `{fmt_shape(self.flat)}` to `{fmt_shape(self.blocked)}`"
        if not self.left_over:
            return reshape
        return (
            f"take the first {self.used:,} pairs (pmap gives every device the same block, and "
            f"{self.pairs:,} do not split evenly over {self.devices} devices: {self.used:,} is "
            f"the largest multiple of {self.devices}, leaving {self.left_over:,} out) and "
            f"{reshape}"
        )


def split(n_devices: int, pairs: int = SEED_PAIRS) -> SeedSplit:
    """The seed's ``pairs`` over ``n_devices`` devices (at least one pair a device)."""
    if not 1 <= n_devices <= pairs:
        raise ValueError(f"{pairs:,} pairs cannot give each of {n_devices} devices a pair")
    return SeedSplit(pairs, n_devices)
