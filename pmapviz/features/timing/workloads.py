"""What the Timing lab times: dot products, a matrix multiply, an elementwise op, and the
explorer's settings as one more workload; each with its inputs, its f (in JAX and in numpy)
and what one call costs (bytes moved, FLOPs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Workload:
    """One thing to benchmark (dot products, matmul, elementwise): its inputs, f and costs."""

    key: str
    label: str
    unit: str  # what `size` counts
    description: str

    def inputs(self, size: int, rng: np.random.Generator) -> list[np.ndarray]:
        """Random float32 inputs for ``size`` items, whole (not yet split over devices)."""
        if self.key == "dot":
            return [rng.random((size, 3), dtype=np.float32) for _ in range(2)]
        if self.key == "matmul":
            return [
                rng.random((size, MATMUL_K), dtype=np.float32),
                rng.random((MATMUL_K, MATMUL_K), dtype=np.float32),
            ]
        return [rng.random((size,), dtype=np.float32)]

    @property
    def split(self) -> tuple[bool, ...]:
        """Which inputs are split over devices (True) or given whole to each (False)."""
        return {"dot": (True, True), "matmul": (True, False)}.get(self.key, (True,))

    def block_fn(self) -> Callable:
        """f for a block of items (leading axis): what every implementation runs."""
        import jax
        import jax.numpy as jnp

        if self.key == "dot":
            return jax.vmap(jnp.dot)
        if self.key == "matmul":
            return lambda x, w: x @ w
        return lambda x: x * 2.0 + 1.0

    def numpy_fn(self) -> Callable:
        """The same f in plain numpy, on the host: the numpy implementation."""
        if self.key == "dot":
            return lambda x, y: np.einsum("ij,ij->i", x, y)
        if self.key == "matmul":
            return lambda x, w: x @ w
        return lambda x: x * np.float32(2.0) + np.float32(1.0)

    def bytes_moved(self, size: int) -> int:
        """Bytes read and written by one call: the memory traffic no implementation can avoid."""
        if self.key == "dot":
            return size * (2 * 3 * 4 + 4)
        if self.key == "matmul":
            return size * MATMUL_K * 4 * 2 + MATMUL_K * MATMUL_K * 4
        return size * 4 * 2

    def output_bytes(self, size: int) -> int:
        """Bytes of one call's output, copied back from the devices."""
        return size * (MATMUL_K * 4 if self.key == "matmul" else 4)

    def flops(self, size: int) -> int:
        """Floating-point operations of one call."""
        if self.key == "dot":
            return size * 5
        if self.key == "matmul":
            return 2 * size * MATMUL_K * MATMUL_K
        return size * 2

    def input_bytes(self, size: int) -> int:
        """Bytes of one call's inputs, placed on the devices."""
        if self.key == "dot":
            return size * 3 * 4 * 2
        if self.key == "matmul":
            return size * MATMUL_K * 4 + MATMUL_K * MATMUL_K * 4
        return size * 4


MATMUL_K = 256
WORKLOADS = {
    w.key: w
    for w in (
        Workload(
            "dot",
            "Dot products (the seed)",
            "pairs of 3-vectors",
            "x, y: (size, 3) -> one dot product per pair; memory-bound",
        ),
        Workload(
            "matmul",
            f"Matrix multiply (size, {MATMUL_K}) @ ({MATMUL_K}, {MATMUL_K})",
            "rows",
            "rows split over devices, the weights given whole to each; "
            "compute-bound, so the memory floor is far below it",
        ),
        Workload(
            "elementwise", "Elementwise x * 2 + 1", "elements", "the simplest memory-bound op"
        ),
    )
}


PLAN_WORKLOAD = Workload(
    "explorer",
    "The explorer's settings",
    "elements of the first input",
    "as set on the Shapes & sharding page",
)
