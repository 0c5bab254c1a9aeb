"""The adoption rule's checks (README.md) on a results JSON of run.py.

    PYTHONPATH=$PWD python studies/pieces-meet/summarize.py studies/pieces-meet/results.json figure
"""
import json
import sys

d = json.load(open(sys.argv[1]))
cand = sys.argv[2]
ok_all = True
for name, v in d.items():
    m = v["mean"]
    cases = v["cases"]
    over = []
    for c, r in cases.items():
        b, x = r["bini"]["made"], r[cand]["made"]
        bound = max(1.25 * b, b + 0.05) if name == "diligent" else 1.25 * b
        if name in ("diligent", "meshes", "real-like") and x > bound:
            over.append(f"{c} {x:.4f} > {bound:.4f}")
    # rule 3 (clean renders) bounds the mean by bini's, not today's: there it is information
    above = "above (no rule)" if name == "meshes" else "ABOVE"
    checks = [f"mean {m[cand]:.5f} vs today {m['today']:.5f}: {'ok' if m[cand] <= m['today'] else above}"]
    if name == "meshes":
        checks.append(f"{m[cand] / m['bini']:.3f}x bini: {'ok' if m[cand] <= 0.75 * m['bini'] else 'OVER 0.75x'}")
    if over:
        checks.append("over bound: " + "; ".join(over))
    ok = all("ABOVE" not in c and "OVER" not in c for c in checks) and not over
    ok_all &= ok
    moved = {c: r[cand].get("moved") for c, r in cases.items() if r[cand].get("moved")}
    print(f"{name:10s} today {m['today']:.5f} {cand} {m[cand]:.5f} bini {m['bini']:.5f} | {' | '.join(checks)} | moved {moved}")
print("ALL RULES PASS" if ok_all else "SOME RULE FAILS")
