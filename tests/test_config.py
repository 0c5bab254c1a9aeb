"""The integration's configuration (fnin_cli.config), --show-config, the --json "config"
record, and the package's import graph."""

import ast
import dataclasses
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fnin_cli.config import DEFAULT, IntegrationConfig
from fnin_cli.pipeline import integrate, load_input, run_config
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.registry import BY_NAME, METHODS

from helpers_cli import invoke, run_fnin, write_folder

ROOT = Path(__file__).resolve().parents[1]
DOME = ROOT / "samples" / "dome"


def test_default_is_one_frozen_value():
    assert DEFAULT == IntegrationConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.rounds.k = 3.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.rounds = None
    # a variant is built, DEFAULT stays as it was
    variant = replace(DEFAULT, rounds=replace(DEFAULT.rounds, k=3.0))
    assert variant.rounds.k == 3.0 and DEFAULT.rounds.k != 3.0
    assert json.loads(json.dumps(DEFAULT.as_dict())) == DEFAULT.as_dict()


def test_run_config_follows_method_and_refine():
    fnin = run_config("fnin")
    assert fnin["method"] == "fnin" and fnin["one_shot"] == dataclasses.asdict(DEFAULT.one_shot)
    assert fnin["rounds"] == dataclasses.asdict(DEFAULT.rounds)
    assert run_config("fnin", refine=0)["rounds"] is None                      # the one-shot
    three = run_config("fnin", refine=3)["rounds"]
    assert (three["max_rounds"], three["tol"]) == (3, 0.0)                     # exactly 3, no stop rule
    wls = run_config("wls")
    assert wls["one_shot"] is None and wls["rounds"] is None                   # no network, no rounds
    assert run_config("bini", refine=2)["rounds"]["max_rounds"] == 2
    assert run_config("fnin", network_side=128)["one_shot"]["network_side"] == 128
    for m in METHODS:
        assert (run_config(m)["rounds"] is not None) == BY_NAME[m].own_rounds


def test_integrate_uses_the_config_it_is_given():
    """A config's constant reaches the run (BiNI's k here), the same as its shorthand."""
    inp = load_input(DOME)
    k3 = replace(DEFAULT, solver=replace(DEFAULT.solver, k=3.0), rounds=replace(DEFAULT.rounds, k=3.0))
    default = integrate(inp, "bini").depth
    np.testing.assert_array_equal(integrate(inp, "bini", config=DEFAULT).depth, default)
    other = integrate(inp, "bini", config=k3).depth
    assert not np.array_equal(other, default, equal_nan=True)
    np.testing.assert_array_equal(other, integrate(inp, "bini", bini_k=3.0).depth)


def test_bini_k_option_reaches_the_run(tmp_path):
    """--bini-k K is the API's bini_k (issue 43): the same depth bit for bit and another
    than the default k's, recorded in --show-config and the --json config; K must be > 0."""
    c = write_folder(tmp_path / "case", seed=2)          # 48x48: bini in a blink
    inp = load_input(c)
    r = invoke(["integrate", c, "--method", "bini", "--bini-k", "4", "-o", tmp_path / "k4.npy", "--json"])
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["config"] == run_config("bini", bini_k=4.0)
    assert rec["config"]["solver"]["k"] == 4.0 and DEFAULT.solver.k != 4.0
    with limit_threads(1):      # the CLI's thread counts (--threads 1)
        api = integrate(inp, "bini", bini_k=4.0).depth
        default = integrate(inp, "bini").depth
    np.testing.assert_array_equal(np.load(tmp_path / "k4.npy"), api)
    assert not np.array_equal(api, default, equal_nan=True)
    shown = json.loads(invoke(["integrate", "--show-config", "--bini-k", "4"]).stdout)
    assert shown["solver"]["k"] == 4.0 and shown["rounds"]["k"] == 4.0          # fnin's rounds too
    for bad in ("0", "-1", "nan", "inf"):
        r = invoke(["integrate", c, "--method", "bini", "--bini-k", bad, "-o", tmp_path / "x.npy"])
        assert r.exit_code == 2 and "Traceback" not in r.stderr
        assert r.stderr.strip() == f"error: --bini-k must be a positive number, got {float(bad):g}"
    assert not (tmp_path / "x.npy").exists()


def test_show_config_prints_what_would_run_and_exits_0():
    r = invoke(["integrate", "--show-config"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == run_config()
    r = invoke(["integrate", "--show-config", "--method", "bini", "--refine", "2"])
    assert r.exit_code == 0 and json.loads(r.stdout) == run_config("bini", 2)
    assert json.loads(r.stdout)["rounds"]["max_rounds"] == 2
    r = invoke(["integrate", "--show-config", "--method", "nope"])             # options are still checked
    assert r.exit_code == 2 and "unknown method" in r.output
    r = invoke(["integrate", "-o", "x.ply"])                                   # INPUT stays required
    assert r.exit_code == 2 and "Missing argument 'INPUT...'" in r.output


def test_json_record_has_the_config_it_ran(tmp_path):
    p = run_fnin(["integrate", DOME, "-o", tmp_path / "d.npy", "--method", "wls", "--json"])
    assert p.returncode == 0, p.stderr
    rec = json.loads(p.stdout)
    assert list(rec) == ["input", "status", "error", "outputs", "method", "refine", "iterations", "camera", "shape",
                         "pixels", "seconds", "scale_note", "warnings", "peak_rss_mb", "convention", "mask_source",
                         "camera_source", "config", "loose_pieces"]
    assert rec["config"] == run_config("wls")
    # a failed input records it too
    p = run_fnin(["integrate", tmp_path / "missing.png", "-o", tmp_path / "m.npy", "--method", "bini", "--refine",
                  "1", "--json"])
    rec = json.loads(p.stdout)
    assert p.returncode == 1 and rec["status"] == "failed" and rec["config"] == run_config("bini", 1)


# ------------------------------------------------------------------ the import graph

def _package_imports():
    """{module: set of package modules it imports (anywhere in it)}, and the private
    names imported from another module, from the source (ast, nothing imported)."""
    pkg = ROOT / "fnin_cli"
    modules = {}
    for p in pkg.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    graph, private = {}, []
    for name, (path, is_pkg) in modules.items():
        out = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name.split(".")[0] == "fnin_cli")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "fnin_cli":
                    continue
                for a in node.names:
                    if f"{target}.{a.name}" in modules:        # a submodule
                        out.add(f"{target}.{a.name}")
                        continue
                    out.add(target)
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        private.append(f"{name} imports {target}.{a.name}")
        graph[name] = {m for m in out if m in modules and m != name}
    return graph, private


def test_package_import_graph_has_no_cycle():
    graph, _ = _package_imports()
    assert "fnin_cli.config" in graph and not graph["fnin_cli.config"]        # the config imports nothing
    state, cycles = {}, []

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycles.append(" -> ".join(path[path.index(n):] + [n]))
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles


def test_no_private_name_is_imported_across_modules():
    _, private = _package_imports()
    assert not private, private


def test_lower_layers_do_not_import_higher_ones():
    """model, solvers, io and checks never import the pipeline, batch, bench, train or cli."""
    graph, _ = _package_imports()
    high = ("fnin_cli.pipeline", "fnin_cli.batch", "fnin_cli.bench", "fnin_cli.train", "fnin_cli.cli")
    low = ("fnin_cli.model", "fnin_cli.solvers", "fnin_cli.io", "fnin_cli.checks", "fnin_cli.camera", "fnin_cli.inputs",
           "fnin_cli.conventions", "fnin_cli.config")
    bad = [f"{m} -> {n}" for m, deps in graph.items() if m.startswith(low) for n in deps if n.startswith(high)]
    assert not bad, bad
    # the network (model) sits below the solvers: it reads its constants from the config
    assert not [f"{m} -> {n}" for m, deps in graph.items() if m.startswith("fnin_cli.model")
                for n in deps if n.startswith("fnin_cli.solvers")]


# ------------------------------------------------------------------ one message per rule

def test_the_cli_and_the_api_say_the_same_for_the_same_mistake(tmp_path):
    """Each rule is checked in one place: the CLI's record (or usage error) carries the
    message the Python API raises."""
    from fnin_cli.errors import FninError, cli_messages, python_names
    from fnin_cli.model import unknown_device
    from fnin_cli.pipeline import ORTHO_AND_K, build_input

    inp = load_input(DOME)
    assert inp.camera.perspective and not inp.mask[0, 0]
    for args, kw in ((["--depth-at", "0,0,1"], {"depth_at": (0, 0, 1.0)}),
                     (["--mean-depth", "-1"], {"mean_depth": -1.0})):
        with pytest.raises(FninError) as api, cli_messages():   # the CLI's wording of the same rule
            integrate(inp, "wls", **kw)
        r = invoke(["integrate", DOME, "-o", tmp_path / "d.npy", "--method", "wls", "--json", *args])
        assert r.exit_code == 1 and json.loads(r.stdout)["error"].startswith(str(api.value))
    with pytest.raises(FninError, match="drop one of them") as api:
        build_input(inp.normals, None, inp.mask, inp.camera.K, ortho=True)
    assert api.value.message == python_names(ORTHO_AND_K) == "ortho=True and a camera (K) both given; drop one of them"
    r = invoke(["integrate", DOME, "--ortho", "--K", DOME / "K.txt"])
    assert r.exit_code == 2 and ORTHO_AND_K in r.stderr
    r = invoke(["integrate", DOME, "--device", "tpu"])
    assert r.exit_code == 2 and unknown_device("tpu") in r.stderr
    from fnin_cli.model.weights import resolve_device

    with pytest.raises(FninError) as api:
        resolve_device("tpu")
    assert api.value.message == unknown_device("tpu")
    with pytest.raises(FninError) as api:
        integrate(inp, "nope")
    r = invoke(["integrate", DOME, "--method", "nope"])
    assert r.exit_code == 2 and api.value.message in r.stderr


def test_integrate_help_names_the_io_format_table():
    from fnin_cli.io import FORMATS, MESH_SUFFIXES

    out = " ".join(invoke(["integrate", "--help"]).output.split())
    for suffix in MESH_SUFFIXES + tuple(f.suffixes[0] for f in FORMATS):
        assert suffix in out
