"""Put `fnin bench` results into the bundled model card's "Measured with these weights" section.

Each result JSON (``fnin bench ... --json PATH``) must record the weights this card
describes (the same sha256); its per-method means, the command that reproduces it and
its machine go into ``fnin_cli/weights/fnin.json`` under ``measured``, and
``MODEL_CARD.md`` is rendered again from that JSON (``train.card.model_card_markdown``).
Usage::

    python benchmarks/card_measurements.py benchmarks/results/diligent_default.json \\
        benchmarks/results/meshes.json --note "..."
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fnin_cli.train.card import model_card_markdown

WEIGHTS = Path(__file__).resolve().parents[1] / "fnin_cli" / "weights"


def bench_command(rec: dict) -> str:
    """The `fnin bench` command line that reproduces a result record (the data where the
    CLI's default data is not the one used are left to the reader)."""
    parts = ["fnin bench", rec["dataset"], "--methods", ",".join(rec["methods"])]
    if rec.get("refine") is not None:
        parts += ["--refine", str(rec["refine"])]
    if rec.get("repeat", 1) > 1:
        parts += ["--repeat", str(rec["repeat"])]
    return " ".join(parts)


def measured_run(rec: dict, sha256: str, source: str) -> dict:
    """The card's record of one bench run; refuses a run of other weights."""
    model = rec.get("model") or {}
    if model.get("sha256") != sha256:
        raise SystemExit(f"{source}: measured with weights {model.get('sha256', 'unrecorded')[:12]}, "
                         f"not this card's {sha256[:12]}")
    mach = rec["machine"]
    return {
        "dataset": rec["dataset"],
        "refine": rec.get("refine"),
        "means": {m: {k: v for k, v in rec["mean"][m].items() if k in ("made_mm", "seconds_total", "cases")}
                  for m in rec["methods"]},
        "command": bench_command(rec),
        "date": mach["date"],
        "machine": f"{mach['cpu']}, {mach['threads']} thread{'s' if mach['threads'] != 1 else ''}, {mach['device']}",
        "source": source,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="fnin bench --json files")
    ap.add_argument("--note", default="", help="a paragraph above the table")
    ap.add_argument("--weights-dir", default=str(WEIGHTS))
    a = ap.parse_args(argv)
    wdir = Path(a.weights_dir)
    card = json.loads((wdir / "fnin.json").read_text())
    runs = [measured_run(json.loads(Path(p).read_text()), card["sha256"], str(p)) for p in a.results]
    card["measured"] = {"note": a.note, "runs": runs}
    (wdir / "fnin.json").write_text(json.dumps(card, indent=2))
    (wdir / "MODEL_CARD.md").write_text(model_card_markdown(card))
    print(f"{len(runs)} run(s) written to {wdir / 'MODEL_CARD.md'}")


if __name__ == "__main__":
    sys.exit(main())
