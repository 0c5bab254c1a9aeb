"""Issue 31 item 2: a fold-or-jump test in the rounds' prior, chosen under the DiLiGenT guard.

Usage (one thread; the rule is in FOLD_OR_JUMP.md, committed before this ran):

    PYTHONPATH=$PWD python studies/trust-rounds/run_fold.py choose --out studies/trust-rounds/results/fold_choose.json
    PYTHONPATH=$PWD python studies/trust-rounds/run_fold.py guard  --out studies/trust-rounds/results/fold_guard.json

Reuses run.py's scenes, scoring and guard; only its table of
configurations is this study's (``DEFAULT`` plus ``integrate(rounds_bias=FoldPrior(...))``;
no module global of the package is assigned).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as tr  # noqa: E402  (this study's run.py)

from dataclasses import replace  # noqa: E402

from fnin_cli.config import DEFAULT  # noqa: E402
from fnin_cli.train.config import VAL_SEED0  # noqa: E402

from fold import FoldPrior  # noqa: E402
from foldhold import FoldHold  # noqa: E402
from gapstop import GapStop  # noqa: E402
from cutstop import CutStop  # noqa: E402


def rounds(fold_cos, fold_join=0.0, fold_same_side=False):
    """The default configuration with the fold prior these settings give (measured as
    RoundsConfig fields of those names, now ``integrate(rounds_bias=)``: fold.py)."""
    return {"config": DEFAULT, "rounds_bias": FoldPrior(fold_cos, fold_join, fold_same_side)}


CONFIGS = {
    "today": {"config": DEFAULT},                                  # at most 8 rounds
    "fold30": rounds(fold_cos=0.3),                    # prior off at folds
    "join30": rounds(fold_cos=0.3, fold_join=2.0),     # off, and held joined
}
# the second rule (README "Second rule"), after fold30/join30 were not adopted: a fold
# also needs both sides to lean the same way along the edge's axis
SECOND = {
    "today": {"config": DEFAULT},
    "joinS30": rounds(fold_cos=0.3, fold_join=2.0, fold_same_side=True),
    "joinS30w": rounds(fold_cos=0.3, fold_join=1.0, fold_same_side=True),
    "joinS20": rounds(fold_cos=0.2, fold_join=2.0, fold_same_side=True),
}
# the third rule (README "Third rule"): the join scaled by the edge net's belief that the
# fold edge is joined (the "the network's confidence as the prior's strength")
THIRD = {
    "today": {"config": DEFAULT},
    "joinC30": {"config": DEFAULT, "rounds_bias": FoldPrior(0.3, 2.0, True, prior_scale=DEFAULT.rounds.edge_prior)},
}
# the fourth rule (FOLD_OR_JUMP.md "Fourth rule"): a fold pixel's weights held at an early
# round's (foldhold.py), the first round's (at=0) or those of its solution (at=1)
HOLD_W0, HOLD_W1 = FoldHold(0.3, at=0), FoldHold(0.3, at=1)
FOURTH = {
    "today": {"config": DEFAULT},
    "holdW0": {"config": DEFAULT, "rounds_bias": HOLD_W0.bias, "rounds_adjust": HOLD_W0.adjust},
    "holdW1": {"config": DEFAULT, "rounds_bias": HOLD_W1.bias, "rounds_adjust": HOLD_W1.adjust},
}
# the fifth rule (FOLD_OR_JUMP.md "Fifth rule"): the hold as strong as the edge net's
# belief that the fold is joined; "round1" (exactly one round) is a record, not a candidate
HOLD_C0 = FoldHold(0.3, at=0, prior_scale=DEFAULT.rounds.edge_prior)
HOLD_C1 = FoldHold(0.3, at=1, prior_scale=DEFAULT.rounds.edge_prior)
FIFTH = {
    "today": {"config": DEFAULT},
    "holdC0": {"config": DEFAULT, "rounds_bias": HOLD_C0.bias, "rounds_adjust": HOLD_C0.adjust},
    "holdC1": {"config": DEFAULT, "rounds_bias": HOLD_C1.bias, "rounds_adjust": HOLD_C1.adjust},
    "round1": {"config": replace(DEFAULT, rounds=DEFAULT.rounds.fixed(1))},
}
# trust-rounds' third rule (README "Third rule: gap stop"): a round that opens the net's cuts
# is undone and ends the rounds (gapstop.py)
GAP0, GAP10 = GapStop(eps=0.0), GapStop(eps=0.10)
GAP = {
    "today": {"config": DEFAULT},
    "gap0": {"config": DEFAULT, "rounds_bias": GAP0.bias, "rounds_adjust": GAP0.adjust, "rounds_stop": GAP0.stop},
    "gap10": {"config": DEFAULT, "rounds_bias": GAP10.bias, "rounds_adjust": GAP10.adjust, "rounds_stop": GAP10.stop},
}
# trust-rounds' fourth rule (README "Fourth rule: one round where the net cuts little"):
# maps whose cut length s = cut edges / sqrt(pixels) is under tau stop after one round
TAUS = (30, 35, 40, 45, 50, 55, 60)
CUT = {"today": {"config": DEFAULT}}
for _tau in TAUS:
    _c = CutStop(_tau)
    CUT[f"cut{_tau}"] = {"config": DEFAULT, "rounds_bias": _c.bias, "rounds_stop": _c.stop}
# the sixth rule (FOLD_OR_JUMP.md "Sixth rule", round 4): join30 shipped as the default under
# the round-4 ruling; the candidate joins only the fold edges the rounds' start left joined
NOJOIN = replace(DEFAULT, rounds=replace(DEFAULT.rounds, fold_cos=None))
SIXTH = {
    "today": {"config": NOJOIN},                                                        # round 3's default
    "join30": {"config": DEFAULT},                                                      # shipped: fold_cos 0.3, join 2
    # measured with RoundsConfig.fold_gate = 1.0 in the package at ae2f02d (solvers.rounds.fold_edges'
    # residual gate); not adopted, the field left the package again
    # "gate1": {"config": replace(DEFAULT, rounds=replace(DEFAULT.rounds, fold_gate=1.0))},
}
SUITE_SEED = 31_003                  # fresh error draws for the real-like suite
MESH_SEED0 = VAL_SEED0 + 3_133_000   # fresh validation-mesh scenes


if __name__ == "__main__":
    import argparse
    import json

    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["choose", "guard"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite-seed", type=int, default=SUITE_SEED)
    ap.add_argument("--mesh-seed0", type=int, default=MESH_SEED0)
    ap.add_argument("--configs", choices=["first", "second", "third", "fourth", "fifth", "gap", "cut", "sixth"], default="first")
    ap.add_argument("--data", default="/work/shared/data/diligent")
    ap.add_argument("--bini", default=os.path.join(HERE, "results", "diligent_adopted.json"),
                    help="a `fnin bench diligent --methods default,bini,wls --json` record (bini is unchanged)")
    args = ap.parse_args()
    tr.CONFIGS.clear()           # trust-rounds' script table, not a package global
    if args.configs != "first":
        CONFIGS = {"second": SECOND, "third": THIRD, "fourth": FOURTH, "fifth": FIFTH, "gap": GAP, "cut": CUT,
                   "sixth": SIXTH}[args.configs]
    tr.CONFIGS.update(CONFIGS)
    with threadpool_limits(1):
        import torch

        torch.set_num_threads(1)
        result = tr.choose(args) if args.what == "choose" else tr.guard(args)
    result["configs"] = {c: {k: repr(v.rounds) if k == "config" else repr(v) for k, v in kw.items()}
                         for c, kw in CONFIGS.items()}
    result["command"] = " ".join(sys.argv)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
