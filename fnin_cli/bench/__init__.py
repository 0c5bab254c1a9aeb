"""`fnin bench`: accuracy and speed of the methods on data with ground truth.

- :mod:`.cases` — the cases (DiLiGenT, folders, synthetic) and the error protocol.
- :mod:`.runner` — running methods on cases (isolated processes, warm-up, peak memory).
- :mod:`.report` — CSV, JSON, PNG and the terminal table.
"""

from .cases import (DILIGENT_OBJECTS, GT_FILE, GT_KEY, Case, align_and_errors, data_dir, diligent_dir, resolve_cases,
                    synthetic_cases, unknown_made)
from .report import rich_table, summary_png, write_case_outputs, write_csv, write_json
from .runner import DEFAULT_METHODS, child_main, failed_runs, machine_info, run_bench, run_one

__all__ = ["DEFAULT_METHODS", "DILIGENT_OBJECTS", "GT_FILE", "GT_KEY", "Case", "align_and_errors", "data_dir",
           "diligent_dir", "failed_runs", "machine_info", "resolve_cases", "rich_table", "run_bench", "run_one", "summary_png",
           "synthetic_cases", "unknown_made", "write_case_outputs", "write_csv", "write_json"]
