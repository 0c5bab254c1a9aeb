"""Predictable outputs and progress (issue 16, items 3 and 5): side-output names, the
depth PNG's stored scale, labelled previews, interrupted runs, the live status."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers_cli import invoke, write_case


def test_side_outputs_follow_the_stem_of_o(tmp_path):
    c = write_case(tmp_path / "in", seed=2, name="dome")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "-o", out / "dome_bini.ply", "--depth", ".npy", "--weights", ".exr", "--preview", ".png"])
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dome_bini.ply", "dome_bini_depth.npy",
                                                     "dome_bini_preview.png", "dome_bini_weights.exr"]


def test_side_outputs_with_out_dir_follow_the_input(tmp_path):
    c = write_case(tmp_path / "in", seed=2, name="dome")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "--out-dir", out, "--format", "obj", "--depth", ".npy", "--weights", "{stem}_w.npy"])
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dome.obj", "dome_depth.npy", "dome_w.npy"]


# ------------------------------------------------------------------ the live status

def _fake_terminal(monkeypatch, terminal=True):
    """Give `fnin integrate` a stderr console that is (or is not) a terminal; returns its buffer."""
    import io as _io

    from rich.console import Console

    from fnin_cli.batch import progress
    from fnin_cli.cli import integrate as cli_integrate

    buf = _io.StringIO()
    monkeypatch.setattr(cli_integrate, "stderr_console",
                        lambda: Console(file=buf, force_terminal=terminal, width=120))
    monkeypatch.setattr(progress, "STATUS_DELAY", 0.0)
    return buf


def _status_run(tmp_path, monkeypatch, *extra, terminal=True):
    buf = _fake_terminal(monkeypatch, terminal)
    c = write_case(tmp_path / "in", seed=2, name="dome")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "bini", "--refine", "2",
                "-o", out / "dome.ply", "--depth", ".npy", *extra])
    return r, buf.getvalue()


def test_status_shows_the_stages_on_a_terminal(tmp_path, monkeypatch):
    r, shown = _status_run(tmp_path, monkeypatch)
    assert r.exit_code == 0, r.stderr
    for stage in ("dome", "load", "solve", "refine round 1 of 2", "mesh", "write"):
        assert stage in shown, (stage, shown)
    assert " s" in shown and "ok " in shown  # elapsed seconds, then the result line


def test_bini_status_shows_its_iteration_cap(tmp_path, monkeypatch):
    # issue 51: "solve (iteration 4)" said nothing of how long BiNI may run
    from fnin_cli.batch.progress import stage_text
    from fnin_cli.config import DEFAULT

    assert stage_text("solve", 4, 150) == "solve (iteration 4, at most 150)"
    assert stage_text("solve", 4) == "solve (iteration 4)"
    from fnin_cli import pipeline

    c = write_case(tmp_path / "in", seed=2, name="dome")
    seen = []
    pipeline.integrate(pipeline.load_input(c["normals"], mask=c["mask"], K=c["K"]), method="bini", refine=0,
                       stage=lambda *a: seen.append(a))
    assert ("solve", None, DEFAULT.solver.max_iter) in seen, seen


def test_status_is_silent_with_quiet_or_without_a_terminal(tmp_path, monkeypatch):
    r, shown = _status_run(tmp_path / "a", monkeypatch, "--quiet")
    assert r.exit_code == 0 and shown == ""
    r, shown = _status_run(tmp_path / "b", monkeypatch, terminal=False)
    assert r.exit_code == 0
    assert "ok " in shown and "load" not in shown and "refine round" not in shown and "\x1b" not in shown


def test_status_keeps_json_stdout_pure(tmp_path, monkeypatch):
    buf = _fake_terminal(monkeypatch)
    c = write_case(tmp_path / "in", seed=2, name="a")
    write_case(tmp_path / "in", seed=4, name="b")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], tmp_path / "in" / "b.png", "--method", "bini", "--out-dir", out,
                "--json"])
    assert r.exit_code == 0, r.stderr
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [rec["status"] for rec in recs] == ["ok", "ok"]
    assert "solve" in buf.getvalue() and "2/2" not in r.stdout


def test_status_shows_each_workers_stages_with_jobs(tmp_path, monkeypatch):
    """With --jobs 2 the inputs run in worker processes; their stages reach the status
    through a queue, one row per running input (it used to list the names only)."""
    buf = _fake_terminal(monkeypatch)
    for seed, name in ((2, "alpha"), (4, "beta")):
        write_case(tmp_path / "in", seed=seed, name=name)
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", tmp_path / "in" / "alpha.png", tmp_path / "in" / "beta.png", "--method", "bini",
                "--refine", "2", "--out-dir", out, "--jobs", "2", "--json"])
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line)["status"] for line in r.stdout.splitlines()] == ["ok", "ok"]
    shown = buf.getvalue()
    lines = [line for line in shown.splitlines() if "refine round" in line]
    for name in ("alpha", "beta"):   # each input's own row got a stage from its worker
        assert any(name in line for line in lines), (name, shown)
    assert "2/2" in shown


# ------------------------------------------------------------------ interrupted runs

def _three_inputs(tmp_path):
    paths = [write_case(tmp_path / "in", seed=s, name=n)["normals"] for s, n in ((2, "a"), (4, "b"), (6, "c"))]
    out = tmp_path / "out"
    out.mkdir()
    return paths, out


def _interrupt_at(monkeypatch, where, name):
    """Ctrl-C while input ``name`` is integrated ('integrate') or just after its files were written ('written')."""
    from fnin_cli.batch import runner

    if where == "integrate":
        real = runner.integrate

        def fake(inp, *a, **k):
            if inp.source.endswith(f"{name}.png"):
                raise KeyboardInterrupt
            return real(inp, *a, **k)

        monkeypatch.setattr(runner, "integrate", fake)
    else:
        real_w = runner.write_outputs

        def fake_w(outputs, inp, *a, **k):
            written = real_w(outputs, inp, *a, **k)
            if inp.source.endswith(f"{name}.png"):
                raise KeyboardInterrupt
            return written

        monkeypatch.setattr(runner, "write_outputs", fake_w)


def _interrupted_run(tmp_path, monkeypatch, where, name, *extra):
    """Three wls inputs into --out-dir with --json, Ctrl-C at ``where`` of input ``name``;
    returns the result, its records, the input paths and the output folder."""
    paths, out = _three_inputs(tmp_path)
    _interrupt_at(monkeypatch, where, name)
    r = invoke(["integrate", *paths, "--method", "wls", "--out-dir", out, "--json", *extra])
    return r, [json.loads(line) for line in r.stdout.splitlines()], paths, out


def test_interrupt_gives_one_record_per_input_and_exit_130(tmp_path, monkeypatch):
    r, recs, paths, out = _interrupted_run(tmp_path, monkeypatch, "integrate", "b", "--jobs", "1")
    assert r.exit_code == 130, r.stderr
    assert [rec["status"] for rec in recs] == ["ok", "interrupted", "not started"]
    assert [rec["input"] for rec in recs] == [str(p) for p in paths]
    assert recs[1]["outputs"] == {} and recs[2]["outputs"] == {}
    assert sorted(p.name for p in out.iterdir()) == ["a.ply"]
    assert "interrupted" in r.stderr and "Traceback" not in r.stderr


def test_interrupt_after_the_last_write_exits_0(tmp_path, monkeypatch):
    r, recs, _, out = _interrupted_run(tmp_path, monkeypatch, "written", "c", "--depth", ".npy")
    assert r.exit_code == 0, r.stderr
    assert [rec["status"] for rec in recs] == ["ok", "ok", "interrupted"]
    assert set(recs[2]["outputs"]) == {"mesh", "depth"}
    assert len(list(out.iterdir())) == 6


def test_interrupt_of_a_middle_input_after_its_writes_still_exits_130(tmp_path, monkeypatch):
    r, recs, _, _ = _interrupted_run(tmp_path, monkeypatch, "written", "b")
    assert r.exit_code == 130, r.stderr
    assert [rec["status"] for rec in recs] == ["ok", "interrupted", "not started"]
    assert set(recs[1]["outputs"]) == {"mesh"}


# ------------------------------------------------------------------ depth read back

def test_depth_png_records_its_scale_and_reads_back(tmp_path):
    from fnin_cli import io
    from fnin_cli.io.depth import OFFSET_KEY, SCALE_KEY, png_text

    c = write_case(tmp_path / "in", seed=2, name="dome")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "-o", out / "d.png", "--weights", ".npy"])
    assert r.exit_code == 0, r.stderr
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "-o", out / "d.npy"])
    assert r.exit_code == 0, r.stderr
    exact = np.load(out / "d.npy")
    text = png_text(out / "d.png")
    step = float(text[SCALE_KEY])
    assert step > 0 and float(text[OFFSET_KEY]) == pytest.approx(np.nanmin(exact), rel=1e-6)
    back = io.read_depth(out / "d.png")
    assert back.dtype == np.float32 and back.shape == exact.shape
    assert np.array_equal(np.isnan(back), np.isnan(exact))
    assert np.nanmax(np.abs(back - exact)) <= 0.5 * step * 1.001 + 1e-7
    assert np.array_equal(io.read_depth(out / "d.npy"), exact, equal_nan=True)


@pytest.mark.parametrize("suffix", [".exr", ".tif", ".npy"])
def test_read_depth_of_float_files(tmp_path, suffix):
    from fnin_cli import io

    d = np.linspace(1, 2, 48 * 40, dtype=np.float32).reshape(40, 48)
    d[:3] = np.nan
    io.write_array(tmp_path / f"d{suffix}", d)
    assert np.array_equal(io.read_depth(tmp_path / f"d{suffix}"), d, equal_nan=True)


def test_read_depth_refuses_a_png_without_the_scale(tmp_path):
    from fnin_cli import io
    from fnin_cli.errors import FninError

    io.write_png(tmp_path / "plain.png", np.full((8, 8), 300, np.uint16))
    with pytest.raises(FninError, match="depth scale.*exr, .npy or .tif"):
        io.read_depth(tmp_path / "plain.png")


# ------------------------------------------------------------------ labelled preview

def test_preview_panels_are_titled_with_a_depth_legend(tmp_path, monkeypatch):
    from PIL import Image

    from fnin_cli.batch import preview

    c = write_case(tmp_path / "in", seed=2, name="dome")
    out = tmp_path / "out"
    out.mkdir()
    args = ["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "bini",
            "-o", out / "dome.ply", "--preview", ".png", "--depth", ".npy"]
    assert invoke(args).exit_code == 0
    img = np.asarray(Image.open(out / "dome_preview.png").convert("RGB"))
    # the masked object of a 48x48 scene, cropped, each panel widened to fit its labels
    mask = np.asarray(Image.open(c["mask"])) > 0
    rows = np.flatnonzero(mask.any(1))
    ph = min(48, rows[-1] + 1 + 8) - max(0, rows[0] - 8)
    assert img.shape == (preview.TITLE_HEIGHT + ph + preview.LEGEND_HEIGHT, 3 * preview.MIN_PANEL_WIDTH + 8, 3)
    # without the text, the title and legend strips would be plain background
    monkeypatch.setattr("PIL.ImageDraw.ImageDraw.text", lambda self, *a, **k: None)
    assert invoke(args[:-4] + ["--preview", out / "bare.png", "--force"]).exit_code == 0
    bare = np.asarray(Image.open(out / "bare.png").convert("RGB"))
    assert bare.shape == img.shape
    titles, legend = slice(0, preview.TITLE_HEIGHT), slice(img.shape[0] - preview.LEGEND_HEIGHT, None)
    assert (bare[titles] == preview._BACKGROUND).all() and not (img[titles] == preview._BACKGROUND).all()
    assert (img[legend] != bare[legend]).any(axis=-1).sum() > 100  # near/far depth and the colour key
    assert np.array_equal(img[preview.TITLE_HEIGHT:-preview.LEGEND_HEIGHT],
                          bare[preview.TITLE_HEIGHT:-preview.LEGEND_HEIGHT])  # panels untouched


def _small_folder(folder, seed=2, h=48, w=64):
    """A DiLiGenT-layout folder of a small synthetic map (h x w)."""
    from fnin_cli import io
    from fnin_cli.data.synthetic import make_scene

    s = make_scene(seed, h, w)
    folder.mkdir(parents=True)
    io.write_normal_map(folder / "normal_map.png", s.normals)
    io.write_png(folder / "mask.png", (s.mask * 255).astype(np.uint8))
    if s.K is not None:
        np.savetxt(folder / "K.txt", s.K)
    return folder


@pytest.mark.parametrize("seed", [2, 11])        # perspective, orthographic
def test_preview_of_a_small_map_shows_its_whole_legend_and_the_folder_name(tmp_path, monkeypatch, seed):
    """Issue 43: on a 64x48 map the legend's clipped-pixel line was cut ('32 px beyond
    near/f..'; 150 px panels, widths counted at 6 px a character of a proportional font),
    and a folder was titled '.../normal_map.png'. Every text drawn now ends inside the
    picture and its panel, uncut, and the title names the folder."""
    from PIL import ImageDraw

    from fnin_cli.batch import preview

    folder = _small_folder(tmp_path / "scan_07", seed)
    drawn = []
    real_text = ImageDraw.ImageDraw.text

    def text(self, xy, t, *a, **k):
        drawn.append((xy, t, self.im.size[0]))
        return real_text(self, xy, t, *a, **k)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", text)
    r = invoke(["integrate", folder, "--method", "bini", "-o", tmp_path / "d.npy", "--preview", tmp_path / "p.png",
                "--json"])
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout)
    texts = [t for _, t, _ in drawn]
    shown, rest = texts[0].split(" | ", 1)
    assert shown in (str(folder), f"{folder.parent.name}/{folder.name}")           # long paths: the last two
    assert rest == f"bini, {rec['iterations']} iterations | {rec['camera']}" and rec["iterations"] > 1
    assert any(t.endswith("px beyond near/far, clipped") for t in texts), texts   # the line that was cut
    for (x, _), t, width in drawn:
        assert not t.endswith("..") and x + preview._text_width(t) <= width, (t, x, width)


def test_preview_title_counts_the_methods_iterations_and_the_rounds(tmp_path):
    from types import SimpleNamespace

    from fnin_cli.batch.preview import method_iterations, preview_title
    from fnin_cli.camera import Camera

    inp = SimpleNamespace(source=str(tmp_path / "scans" / "cat" / "normal_map.png"))
    cam = Camera(None, 1.0)

    def title(method, iterations, rounds):
        return preview_title(inp, SimpleNamespace(method=method, iterations=iterations, rounds=rounds, camera=cam))

    # Result.iterations counts the method's own and the rounds after it
    assert title("bini", 135, 0).endswith("cat | bini, 135 iterations | orthographic")
    assert title("bini", 137, 2).endswith("cat | bini, 135 iterations, 2 rounds | orthographic")
    assert title("fnin", 7, 6).endswith("cat | fnin, 6 rounds | orthographic")
    assert title("fnin", 1, 0).endswith("cat | fnin, 0 rounds | orthographic")          # the one-shot
    assert title("wls", 2, 1).endswith("cat | wls, 1 round | orthographic")
    assert method_iterations(SimpleNamespace(iterations=137, rounds=2)) == 135
    plain = SimpleNamespace(source=str(tmp_path / "maps" / "statue.png"))
    assert preview_title(plain, SimpleNamespace(method="wls", iterations=1, rounds=0, camera=cam)).endswith(
        "maps/statue.png | wls, 0 rounds | orthographic")


def test_status_waits_a_second_so_quick_inputs_print_only_their_result(tmp_path, monkeypatch):
    buf = _fake_terminal(monkeypatch)
    monkeypatch.setattr("fnin_cli.batch.progress.STATUS_DELAY", 5.0)
    c = write_case(tmp_path / "in", seed=2, name="dome")
    r = invoke(["integrate", c["normals"], "--method", "wls", "-o", tmp_path / "d.npy"])
    assert r.exit_code == 0, r.stderr
    assert "ok " in buf.getvalue() and "load" not in buf.getvalue()


def test_ctrl_c_while_a_record_is_reported_reports_each_input_once(tmp_path):
    """Regression (a flaky --jobs 1 Ctrl-C test): an interrupt between reporting a record
    and counting it as reported made the interrupt report that record again."""
    import os
    import signal

    from fnin_cli.batch.options import Options
    from fnin_cli.batch.plan import plan_jobs
    from fnin_cli.batch.runner import Interrupted, run_jobs

    paths, out = _three_inputs(tmp_path)
    jobs = plan_jobs([str(p) for p in paths], out_dir=out)
    seen = []

    def on_record(i, rec):
        seen.append(i)
        if len(seen) == 1:
            os.kill(os.getpid(), signal.SIGINT)      # arrives right after the first report

    # Python's Ctrl-C handler, also when the test run was started with SIGINT ignored (`cmd &`)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(Interrupted):
            run_jobs(jobs, Options(method="wls").check(), on_record=on_record)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [0, 1, 2]
