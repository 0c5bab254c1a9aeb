"""The docs stay true: every path, ``module.NAME`` and ``file.md#anchor`` they cite exists,
every benchmark script is listed in benchmarks/README.md, and studies stand alone."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache
from pathlib import Path

import pytest

import fnin_cli

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), REPO / "benchmarks" / "README.md",
               REPO / "studies" / "README.md", *(REPO / "studies").glob("*/README.md")])
TOP = ("benchmarks/", "studies/", "docs/", "fnin_cli/", "tests/", "samples/", "scripts/")
FILE_EXT = re.compile(r"\.(json|md|py|sh|png|ply|obj|npy|npz|safetensors|txt|csv|exr|tif|tiff|toml|pt)$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TICKS = re.compile(r"`([^`\n]+)`")
MD_ANCHOR = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md)#([a-z0-9-]+)")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation out, spaces to hyphens."""
    s = re.sub(r"[`*_]", "", heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


@lru_cache(maxsize=None)
def _anchors(path: Path) -> frozenset:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return frozenset(_slug(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+)$", text, re.M))


@lru_cache(maxsize=None)
def _modules() -> dict:
    """Every module of the package by its dotted name without ``fnin_cli.``, and by each
    dotted suffix that names one module only (``stage2`` -> ``solvers.stage2``)."""
    names = [m.name[len("fnin_cli."):] for m in pkgutil.walk_packages(fnin_cli.__path__, "fnin_cli.")]
    by = {n: n for n in names}
    suffixes: dict = {}
    for n in names:
        parts = n.split(".")
        for i in range(1, len(parts)):
            suffixes.setdefault(".".join(parts[i:]), set()).add(n)
    for s, full in suffixes.items():
        if s not in by and len(full) == 1:
            by[s] = next(iter(full))
    return by


def _resolve_name(token: str):
    """For ``module.NAME[.attr...]`` (``fnin_cli.`` optional, a unique module suffix
    allowed): None when it is no module cite, True when it resolves, else the reason."""
    token = token.removeprefix("fnin_cli.")
    parts = token.split(".")
    mods = _modules()
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in mods:
            obj = importlib.import_module("fnin_cli." + mods[head])
            for j, attr in enumerate(parts[i:]):
                if not hasattr(obj, attr):
                    sub = f"fnin_cli.{mods[head]}.{'.'.join(parts[i:i + j + 1])}"
                    try:
                        obj = importlib.import_module(sub)
                        continue
                    except ImportError:
                        return f"{mods[head]} has no {'.'.join(parts[i:i + j + 1])}"
                obj = getattr(obj, attr)
            return True
    return None


def _cites(path: Path):
    """(kind, target, line) of every cite in a Markdown file: links, backticked repo paths,
    backticked ``module.NAME`` names and ``file.md#anchor`` mentions."""
    text = path.read_text()
    for n, line in enumerate(text.splitlines(), 1):
        for m in LINK.finditer(line):
            if not re.match(r"[a-z]+:", m.group(1)):
                yield "link", m.group(1), n
        for m in TICKS.finditer(line):
            inner = m.group(1).strip()
            if inner.startswith("git "):
                continue
            for tok in re.split(r"[\s,;]+", inner):
                tok = tok.strip("()[]'\"").rstrip(".:")
                tok = re.split(r"::|[(=]", tok)[0]
                if "<" in tok or not tok:      # a placeholder such as studies/<name>/
                    continue
                if tok.startswith(TOP) or tok == "README.md":
                    yield "path", tok.split("#")[0], n
                elif re.fullmatch(r"[a-z_][\w]*(\.[A-Za-z_]\w*)+", tok) and not FILE_EXT.search(tok):
                    yield "name", tok, n
        for m in MD_ANCHOR.finditer(re.sub(LINK, "", line)):
            yield "anchor", f"{m.group(1)}#{m.group(2)}", n


def _md_target(base: Path, ref: str) -> Path | None:
    """A cited Markdown file: relative to the citing file, else to the repository root,
    else (a bare name such as ``decisions.md``) under docs/."""
    for cand in (base / ref, REPO / ref, REPO / "docs" / ref):
        if cand.is_file():
            return cand
    return None


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_every_cite_in_the_docs_exists(doc):
    assert doc.is_file(), f"{_rel(doc)} is missing"
    bad = []
    for kind, target, n in _cites(doc):
        where = f"{_rel(doc)}:{n}: {target}"
        if kind == "link":
            file, _, anchor = target.partition("#")
            dest = (doc.parent / file).resolve() if file else doc
            if not dest.exists():
                bad.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                bad.append(f"{where} (no such anchor)")
            elif not str(dest).startswith(str(REPO)):
                bad.append(f"{where} (outside the repository)")
        elif kind == "path":
            if "*" in target or "{" in target:
                if not list(REPO.glob(target.split("{")[0].rstrip("/") or ".")):
                    bad.append(f"{where} (matches nothing)")
            elif not (REPO / target).exists():
                bad.append(f"{where} (no such path)")
        elif kind == "name":
            r = _resolve_name(target)
            if r not in (None, True):
                bad.append(f"{where} ({r})")
        else:
            ref, _, anchor = target.partition("#")
            dest = _md_target(doc.parent, ref)
            if dest is None:
                bad.append(f"{where} (no such file)")
            elif anchor not in _anchors(dest):
                bad.append(f"{where} (no such anchor)")
    assert not bad, "\n".join(bad)


def test_the_values_the_docs_give_are_the_configs():
    """``config.Part.field = value`` in docs/ is the shipped value, so an index entry
    cannot outlive a change of the default."""
    from fnin_cli import config

    bad = []
    for doc in (REPO / "docs").glob("*.md"):
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            for m in re.finditer(r"`config\.(\w+)\.(\w+) = ([^`]+)`", line):
                part = next(f for f in ("solver", "one_shot", "rounds", "pieces", "prior")
                            if type(getattr(config.DEFAULT, f)).__name__ == m.group(1))
                shipped = getattr(getattr(config.DEFAULT, part), m.group(2))
                if shipped != eval(m.group(3), {}):
                    bad.append(f"{_rel(doc)}:{n}: {m.group(1)}.{m.group(2)} is {shipped!r}, not {m.group(3)}")
    assert not bad, "\n".join(bad)


def test_the_codes_doc_cites_exist():
    """Constants and docstrings point to their record as docs/<file>.md plus an anchor,
    or to a file of docs/, studies/ or benchmarks/: each one is there."""
    bad = []
    for src in sorted([*(REPO / "fnin_cli").rglob("*.py"), *(REPO / "benchmarks").glob("*.py"),
                       *(REPO / "studies").rglob("*.py"), *(REPO / "tests").glob("*.py")]):
        for n, line in enumerate(src.read_text().splitlines(), 1):
            for m in re.finditer(r"(docs/[\w-]+\.md)#([a-z0-9-]+)", line):
                dest = REPO / m.group(1)
                if not dest.is_file() or m.group(2) not in _anchors(dest):
                    bad.append(f"{_rel(src)}:{n}: {m.group(0)}")
            for m in re.finditer(r"(?<![\w/.])((?:docs|studies|benchmarks)/[\w./-]+\.(?:py|md|json|sh))", line):
                # scripts' usage lines name outputs still to be written: the package and tests only
                if src.parts[len(REPO.parts)] in ("fnin_cli", "tests") and not (REPO / m.group(1)).is_file():
                    bad.append(f"{_rel(src)}:{n}: {m.group(1)}")
    assert not bad, "\n".join(bad)


def test_docs_and_code_cite_nothing_outside_the_repository():
    """Users have the repository, not the project's spec or its data folders: the docs
    name neither, and the package cites its own docs/ for conventions and equations."""
    bad = []
    for doc in [*(REPO / "docs").glob("*.md"), REPO / "benchmarks" / "README.md"]:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            if "../shared" in line or re.search(r"\bSPEC\b", line):
                bad.append(f"{_rel(doc)}:{n}")
    for src in (REPO / "fnin_cli").rglob("*.py"):
        for n, line in enumerate(src.read_text().splitlines(), 1):
            if re.search(r"\bSPEC\b", line):
                bad.append(f"{_rel(src)}:{n}")
    assert not bad, "\n".join(bad)


def test_every_benchmark_is_listed_in_the_benchmarks_readme():
    readme = (REPO / "benchmarks" / "README.md").read_text()
    scripts = sorted(p.name for p in (REPO / "benchmarks").iterdir() if p.suffix in (".py", ".sh"))
    assert scripts
    missing = [s for s in scripts if f"benchmarks/{s}" not in readme]
    assert not missing, f"not in benchmarks/README.md: {missing}"


def test_studies_stand_alone():
    """Each study folder has a README; a study script imports no other study's script
    (its own modules beside it are its own; shared helpers live in studies/_lib.py,
    imported by path)."""
    folders = [p for p in (REPO / "studies").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))]
    assert folders
    bad = [f.name for f in folders if not (f / "README.md").is_file()]
    for p in (REPO / "studies").glob("*/*.py"):
        # a study's own modules (beside it) are its own; another folder's are not
        others = {q.stem for q in (REPO / "studies").glob("*/*.py") if q.parent != p.parent}
        own = {q.stem for q in p.parent.glob("*.py")}
        for m in re.finditer(r"^\s*(?:from (\w+) import|import (\w+))", p.read_text(), re.M):
            name = m.group(1) or m.group(2)
            if name in others and name not in own:
                bad.append(f"{_rel(p)} imports {name}")
        if re.search(r"sys\.path\.insert\(.*\.\..*trust|os\.path\.join\(HERE, \"\.\.\"", p.read_text()):
            bad.append(f"{_rel(p)} puts another study's folder on sys.path")
    assert not bad, bad


def test_studies_assign_no_module_global():
    """A study varies the shipped configuration (``_lib.variant``), never a module's names
    (``pipeline.X = ...``, ``setattr(stage2, ...)``). One exception: fresh_pages.py times
    two versions of the network's code (today's functions against the ones it replaced),
    which no configuration holds."""
    import ast

    modules = {"fnin_cli", *(n.split(".")[-1] for n in _modules()), *_modules()}
    bad = []
    for p in sorted((REPO / "studies").glob("**/*.py")):
        if p.name == "fresh_pages.py":
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for t in targets:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in modules:
                        bad.append(f"{_rel(p)}:{node.lineno}: {e.value.id}.{e.attr} =")
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and node.args
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in modules):
                bad.append(f"{_rel(p)}:{node.lineno}: setattr({node.args[0].id}, ...)")
    assert not bad, "\n".join(bad)


def test_tests_load_no_study_script():
    """Studies are records, not code the package relies on: no test imports one. The
    studies' shared harness (studies/_lib.py) is the one exception: a test checks that it
    runs exactly the shipped default (tests/test_studies_lib.py)."""
    bad = []
    for src in (REPO / "tests").glob("*.py"):
        if src.name in (Path(__file__).name, "test_studies_lib.py"):
            continue
        text = src.read_text()
        if re.search(r"syspath_prepend\([^)]*studies|spec_from_file_location\([^)]*studies|/ \"studies\"", text):
            bad.append(src.name)
    assert not bad, bad


def test_the_decisions_index_stays_short():
    """docs/decisions.md is an index (the decision, its number, its study), at most 300
    lines; a decision's history goes to its study's README."""
    lines = (REPO / "docs" / "decisions.md").read_text().splitlines()
    assert len(lines) <= 300, f"docs/decisions.md has {len(lines)} lines; move history to studies/<name>/README.md"
