"""The live status of ``fnin integrate`` on a terminal (rich, on stderr).

One line per running input — its stage (load, network, solve with BiNI's iteration,
refine round k of N, mesh, write) and the seconds it has taken — and, for several
inputs, a bar across them. It starts only after ``STATUS_DELAY`` seconds (a quick
input prints nothing but its result line), only when the console is a terminal and
``--quiet`` is not given, and never writes to stdout (``--json``).

The pipeline reports through two callbacks, kept small so that API users can pass
their own: ``stage(name, step, total)`` when a stage starts and ``progress(i)`` after
each BiNI iteration (see :func:`fnin_cli.pipeline.integrate`).
"""

from __future__ import annotations

import threading

STATUS_DELAY = 1.0  # seconds before the status appears (tests set 0)


def stage_text(name: str, step=None, total=None) -> str:
    """'solve', 'solve (iteration 12)', 'refine round 2 of 5', ..."""
    if name == "refine":
        step = step or 1  # step 0: the first round is running
        return f"refine round {step} of {total}" if total else f"refine round {step}"
    if step:
        return f"{name} (iteration {step})"
    return name


class LiveStatus:
    """The status display; every method is a no-op when ``enabled`` is false.

    ``console`` is the rich Console on stderr (tests inject one with
    ``force_terminal=True``). ``total`` inputs: with more than one, a bar across them.
    ``per_input``: show the stage line (inputs run in this process, ``--jobs 1``).
    """

    def __init__(self, console, total: int, enabled: bool, per_input: bool = True, delay: float | None = None):
        self.console = console
        self.enabled = bool(enabled)
        self.many = total > 1
        self.per_input = per_input
        self.delay = STATUS_DELAY if delay is None else delay
        self._lock = threading.RLock()
        self._started = False
        self._closed = False
        self._timer = None
        self._stage = ("", None, None)
        if not self.enabled:
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn

        self.progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), _detail_column(),
                                 console=console, transient=True, refresh_per_second=8,
                                 # stdout is --json's: rich would route it through the console
                                 redirect_stdout=False, redirect_stderr=False)
        self.batch = self.progress.add_task("integrate", total=total, kind="batch", info="") if self.many else None
        self.current = None

    # -------------------------------------------------------------- life cycle

    def open(self):
        """Show the status now (several inputs); one input's shows ``delay`` seconds after
        it starts (``start_input``), so a quick input prints only its result line."""
        if self.enabled and self.many:
            self._start()
        return self

    def _start(self):
        with self._lock:
            if self._closed or self._started:
                return
            self._started = True
            self.progress.start()

    def close(self):
        if not self.enabled:
            return
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._started:
                self.progress.stop()

    def print(self, text: str):
        """A message line above the status (or plainly, when there is none)."""
        with self._lock:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    # -------------------------------------------------------------- reports

    def start_input(self, name: str):
        """An input starts (``--jobs 1``) or was handed to a worker (pool: listed by name)."""
        if not self.enabled:
            return
        with self._lock:
            if not self.per_input:
                self.progress.update(self.batch, info=name)
                return
            if self.current is not None:
                self.progress.remove_task(self.current)
            self.current = self.progress.add_task(name, total=None, kind="input", stage="start")
            self._stage = ("start", None, None)
            if not self._started and self._timer is None:
                if self.delay <= 0:
                    self._start()
                else:
                    self._timer = threading.Timer(self.delay, self._start)
                    self._timer.daemon = True
                    self._timer.start()
            self._refresh()

    def stage(self, name: str, step=None, total=None):
        """Callback for ``pipeline.integrate(stage=...)`` and the runner's own stages."""
        if not self.enabled or self.current is None:
            return
        with self._lock:
            self._stage = (name, step, total)
            self.progress.update(self.current, stage=stage_text(name, step, total))
            self._refresh()

    def iteration(self, i: int):
        """Callback for ``pipeline.integrate(progress=...)``: iteration ``i`` of the stage."""
        if not self.enabled or self.current is None:
            return
        with self._lock:
            name, _, total = self._stage
            # i iterations are done: the next one runs (the last refine round stays shown)
            step = i + 1 if total is None or i < total else i
            self.progress.update(self.current, stage=stage_text(name, step, total))

    def input_done(self):
        if not self.enabled:
            return
        with self._lock:
            if self.current is not None:
                self.progress.remove_task(self.current)
                self.current = None
            if self.batch is not None:
                self.progress.update(self.batch, advance=1, info="")

    def _refresh(self):
        if self._started:
            self.progress.refresh()


def _detail_column():
    # the class is built here, not at module level, so that importing this module does not import rich
    from rich.progress import ProgressColumn

    class DetailColumn(ProgressColumn):
        """Batch row: bar, done/total, elapsed; input row: stage and seconds."""

        def render(self, task):
            from rich.progress_bar import ProgressBar
            from rich.table import Table
            from rich.text import Text

            elapsed = task.elapsed or 0.0
            if task.fields.get("kind") == "batch":
                grid = Table.grid(padding=(0, 1))
                grid.add_row(ProgressBar(total=task.total, completed=task.completed, width=30),
                             Text(f"{int(task.completed)}/{int(task.total)}"),
                             Text(f"{elapsed:.0f} s", style="progress.elapsed"),
                             Text(task.fields.get("info", ""), style="dim"))
                return grid
            return Text.assemble((task.fields.get("stage", ""), "cyan"), "  ",
                                 (f"{elapsed:.1f} s", "progress.elapsed"))

    return DetailColumn()
