"""The live status of ``fnin integrate`` on a terminal (rich, on stderr).

One line per running input — its stage (load, network, solve with BiNI's iteration,
refine round k of N, mesh, write) and the seconds it has taken — and, for several
inputs, a bar across them. Inputs running in ``--jobs`` worker processes report their
stages through a queue (:class:`QueueStatus`, drained by :meth:`LiveStatus.follow`).
It starts only after ``STATUS_DELAY`` seconds (a quick input prints nothing but its
result line), only when the console is a terminal and ``--quiet`` is not given, and
never writes to stdout (``--json``).

The pipeline reports through two callbacks, kept small so that API users can pass
their own: ``stage(name, step, total)`` when a stage starts and ``progress(i)`` after
each BiNI iteration (see :func:`fnin_cli.pipeline.integrate`).
"""

from __future__ import annotations

import queue as _queue
import threading

STATUS_DELAY = 1.0  # seconds before the status appears (tests set 0)


def stage_text(name: str, step=None, total=None) -> str:
    """'solve', 'solve (iteration 12)', 'solve (iteration 12, at most 150)', 'refine round 2 of 5', ..."""
    if name == "refine":
        step = step or 1  # step 0: the first round is running
        return f"refine round {step} of {total}" if total else f"refine round {step}"
    if step:
        return f"{name} (iteration {step}, at most {total})" if total else f"{name} (iteration {step})"
    return name


class LiveStatus:
    """The status display; every method is a no-op when ``enabled`` is false.

    ``console`` is the rich Console on stderr (tests inject one with
    ``force_terminal=True``). ``total`` inputs: with more than one, a bar across them.
    Each running input has a row, keyed by ``key`` (its index; None for the one input
    running in this process).
    """

    def __init__(self, console, total: int, enabled: bool, delay: float | None = None):
        self.console = console
        self.enabled = bool(enabled)
        self.many = total > 1
        self.delay = STATUS_DELAY if delay is None else delay
        self._lock = threading.RLock()
        self._started = False
        self._closed = False
        self._timer = None
        self._rows = {}     # key -> rich task id
        self._stages = {}   # key -> (name, step, total)
        if not self.enabled:
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn

        self.progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), _detail_column(),
                                 console=console, transient=True, refresh_per_second=8,
                                 # stdout is --json's: rich would route it through the console
                                 redirect_stdout=False, redirect_stderr=False)
        self.batch = self.progress.add_task("integrate", total=total, kind="batch") if self.many else None

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

    def start_input(self, name: str, key=None):
        """Input ``name`` starts (in this process, or handed to a worker)."""
        if not self.enabled:
            return
        with self._lock:
            if key in self._rows:
                self.progress.remove_task(self._rows[key])
            self._rows[key] = self.progress.add_task(name, total=None, kind="input", stage="start")
            self._stages[key] = ("start", None, None)
            if not self._started and self._timer is None:
                if self.delay <= 0:
                    self._start()
                else:
                    self._timer = threading.Timer(self.delay, self._start)
                    self._timer.daemon = True
                    self._timer.start()
            self._refresh()

    def stage(self, name: str, step=None, total=None, key=None):
        """Callback for ``pipeline.integrate(stage=...)`` and the runner's own stages."""
        if not self.enabled:
            return
        with self._lock:
            if key not in self._rows:   # a late report of an input already done
                return
            self._stages[key] = (name, step, total)
            self.progress.update(self._rows[key], stage=stage_text(name, step, total))
            self._refresh()

    def iteration(self, i: int, key=None):
        """Callback for ``pipeline.integrate(progress=...)``: iteration ``i`` of the stage."""
        if not self.enabled:
            return
        with self._lock:
            if key not in self._rows:
                return
            name, _, total = self._stages[key]
            # i iterations are done: the next one runs (the last refine round stays shown)
            step = i + 1 if total is None or i < total else i
            self.progress.update(self._rows[key], stage=stage_text(name, step, total))

    def input_done(self, key=None):
        if not self.enabled:
            return
        with self._lock:
            if key in self._rows:
                self.progress.remove_task(self._rows.pop(key))
                self._stages.pop(key, None)
            if self.batch is not None:
                self.progress.update(self.batch, advance=1)

    def follow(self, reports) -> "threading.Event":
        """Show what worker processes put on the queue ``reports`` (:class:`QueueStatus`)
        until the returned event is set."""
        stop = threading.Event()
        if not self.enabled:
            return stop

        def drain():
            while not stop.is_set():
                try:
                    key, kind, args = reports.get(timeout=0.1)
                except _queue.Empty:
                    continue
                except (EOFError, OSError):   # the queue went away with the pool
                    return
                (self.stage if kind == "stage" else self.iteration)(*args, key=key)

        threading.Thread(target=drain, name="fnin-status", daemon=True).start()
        return stop

    def _refresh(self):
        if self._started:
            self.progress.refresh()


class QueueStatus:
    """The stage and iteration callbacks of an input running in a worker process: they
    put ``(key, kind, args)`` on a multiprocessing queue that the parent's
    :meth:`LiveStatus.follow` shows."""

    def __init__(self, reports, key):
        self.reports, self.key = reports, key

    def stage(self, name: str, step=None, total=None):
        self.reports.put((self.key, "stage", (name, step, total)))

    def iteration(self, i: int):
        self.reports.put((self.key, "iteration", (i,)))


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
                             Text(f"{elapsed:.0f} s", style="progress.elapsed"))
                return grid
            return Text.assemble((task.fields.get("stage", ""), "cyan"), "  ",
                                 (f"{elapsed:.1f} s", "progress.elapsed"))

    return DetailColumn()
