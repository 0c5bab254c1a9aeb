"""Where the least-squares solves run: one :class:`Backend`, chosen once per run.

A run's Stage II and its rounds solve on the CPU (a sparse solver, AMG-PCG by default) or,
for large maps whose network ran on a CUDA device, on that device's pixel grid
(:mod:`.grid`: multigrid-PCG on images). :func:`choose_backend` decides that once, where
the run starts (:func:`fnin_cli.pipeline.integrate`), and everything after it reads the
decision from the object it is handed; where the GPU's memory runs out,
:meth:`Backend.or_on_cpu` runs the same step on the CPU and every later step stays there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import DEFAULT, IntegrationConfig

# what a run says when the grid did not fit in the GPU's memory and its solves ran on the CPU
OUT_OF_MEMORY = ("the GPU had too little free memory for the solves on its pixel grid; they ran on the "
                 "CPU instead (slower): free GPU memory, or --downsample N")


@dataclass(frozen=True)
class Backend:
    """Where a run's solves go.

    Attributes
    ----------
    linear : str
        The sparse solver on the CPU (:func:`~fnin_cli.solvers.linear.solve_spd`: amg,
        jacobi, direct, cg, or torch[:DEVICE], a torch Jacobi-PCG).
    grid : str or None
        The torch device ("cuda", "cuda:1", "cpu" for tests) whose pixel grid solves Stage II
        and the rounds (:mod:`.grid`); None: the CPU's sparse solver.

    Examples
    --------
    >>> Backend().on_grid, Backend(grid="cuda:1").on_grid, Backend(grid="cuda:1").on_cpu()
    (False, True, Backend(linear='amg', grid=None))
    """

    linear: str = "amg"
    grid: str | None = None

    @property
    def on_grid(self) -> bool:
        return self.grid is not None

    def on_cpu(self) -> "Backend":
        """This backend with the grid's solves moved to the CPU's AMG."""
        return Backend(self.linear) if self.on_grid else self

    def tolerance(self, config: IntegrationConfig = DEFAULT) -> tuple:
        """(rtol, maxiter) of the one-shot's Stage II solve with this backend: a torch
        Jacobi-PCG gets ``OneShotConfig.gpu_solve_rtol`` (docs/decisions.md#gpu-solve)."""
        one = config.one_shot
        if not self.on_grid and self.linear.startswith("torch"):
            return one.gpu_solve_rtol, one.gpu_maxiter
        return one.solve_rtol, config.solver.maxiter

    def or_on_cpu(self, on_grid, on_cpu, notes: list):
        """``on_grid()`` when this backend is a grid's, or, where the GPU's allocator runs out
        in it, ``on_cpu()`` after its cached blocks are released, with :data:`OUT_OF_MEMORY`
        appended to ``notes``; any other error is raised. On the CPU: ``on_cpu()``."""
        if not self.on_grid:
            return on_cpu()
        import torch   # a grid backend has torch loaded already

        try:
            return on_grid()
        except torch.cuda.OutOfMemoryError:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        notes.append(OUT_OF_MEMORY)
        return on_cpu()


CPU = Backend()


def choose_backend(solver: str = "auto", config: IntegrationConfig = DEFAULT, device=None,
                   pixels: int = 0) -> Backend:
    """The backend of a run.

    ``solver="auto"``: AMG-PCG on the CPU (docs/decisions.md#stage2-on-cpu), or, when the
    network runs on a CUDA ``device`` (a torch device, or None for methods without one) and
    the map has at least ``SolverConfig.gpu_grid_pixels`` masked ``pixels``, the pixel grid
    on that device (docs/decisions.md#grid-on-gpu). ``grid:DEVICE`` asks for the grid on
    DEVICE; any other value names the CPU's sparse solver.

    Examples
    --------
    >>> choose_backend("auto")
    Backend(linear='amg', grid=None)
    >>> choose_backend("grid:cpu")
    Backend(linear='amg', grid='cpu')
    >>> choose_backend("direct")
    Backend(linear='direct', grid=None)
    """
    if solver == "auto":
        least = config.solver.gpu_grid_pixels
        if (device is not None and getattr(device, "type", str(device)).startswith("cuda")
                and least is not None and pixels >= least):
            return Backend(grid=str(device))
        return CPU
    if solver == "grid" or solver.startswith("grid:"):
        return Backend(grid=solver.partition(":")[2] or "cpu")
    return Backend(solver)
