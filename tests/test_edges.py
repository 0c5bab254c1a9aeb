"""The edge net: BiNI targets in torch, the cropped inference, the edges training stage."""

import json

import numpy as np
import pytest
import torch

from fnin_cli.model import inference
from fnin_cli.solvers import stage2
from fnin_cli.model import weights as model_weights
from fnin_cli.model.fnin_net import FNINet
from fnin_cli.model.config import NetConfig
from fnin_cli.model.geometry import bini_targets, one_sided, one_sided_differences
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.solvers.bini import bini_weights
from fnin_cli.data.synthetic import make_scene
from fnin_cli.train.config import TrainConfig
from fnin_cli.train.build import build_model
from fnin_cli.train.loop import export, train
from fnin_cli.train.feed import make_batch
from fnin_cli.solvers.system import DataTerm, NormalSystem

torch.set_num_threads(1)


def _level(inp):
    return inference._level_from_input(inp, torch.device("cpu"))


@pytest.mark.parametrize("ortho", [False, True])
def test_bini_targets_equal_the_solver_weights(ortho):
    """network.bini_targets (torch, batched) = solvers.bini_weights (numpy) on a true surface."""
    sc = make_scene(11, 48, 40, ortho_prob=1.0 if ortho else 0.0, fold_prob=1.0)
    pixel = 1.0 / 48 if ortho else None
    unknown = sc.unknown * (pixel if ortho else 1.0)
    inp = build_input(sc.normals, None, sc.mask, sc.K, pixel_size=pixel)
    s = NormalSystem(inp.normals, inp.mask, inp.camera)
    lv = _level(inp)
    z = torch.from_numpy(np.where(inp.mask, unknown, 0.0)).float()[None, None]
    t = bini_targets(z, lv)[0].double().numpy()
    w = bini_weights(s, unknown[inp.mask])
    assert 0.001 < np.mean(np.abs(w["u-"] - 0.5) > 0.4) < 0.5      # real jumps are in the target
    np.testing.assert_allclose(t[0][inp.mask], w["u-"], atol=2e-3)
    np.testing.assert_allclose(t[1][inp.mask], w["v-"], atol=2e-3)
    r = s.residuals(unknown[inp.mask])
    d = s.differences(unknown[inp.mask])
    for i, key in enumerate(("u+", "u-", "v+", "v-")):
        np.testing.assert_allclose(one_sided(z, lv)[0, i].double().numpy()[inp.mask], r[key], rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(one_sided_differences(z, lv)[0][0, i].double().numpy()[inp.mask], d[key],
                                   rtol=1e-3, atol=1e-3)


def _edge_model(seed=0, width=4):
    torch.manual_seed(seed)
    return FNINet(NetConfig(edge_width=width, edge_dilations=(1, 2, 1))).eval()


def _crop_and_whole(model, sc, mask):
    """(edge_probabilities' cropped run, the edge net on the whole frame, z_R, level)."""
    inp = build_input(sc.normals, None, mask, sc.K)
    lv = _level(inp)
    with torch.no_grad():
        z, _ = model.capped(lv, 64, attention=False)
        whole = torch.sigmoid(model.edges(z, lv)) * lv.mask
        crop = model.edge_probabilities(z, lv)
    assert crop.shape == whole.shape
    return crop, whole, z, lv


def test_cropped_edge_inference_equals_the_whole_frame():
    """edge_probabilities runs on the mask's box plus the receptive field: same numbers."""
    sc = make_scene(5, 90, 120, fold_prob=1.0)
    mask = sc.mask.copy()
    mask[:30], mask[:, :40], mask[:, 100:] = False, False, False
    crop, whole, _, _ = _crop_and_whole(_edge_model(), sc, mask)
    assert float((crop - whole).abs().max()) < 1e-6


@pytest.mark.parametrize("tile", [7, 16, 33])
def test_tiled_edge_inference_equals_the_whole_frame(tile):
    """edge_probabilities tile by tile (halo = the receptive field's radius, tiles without a
    masked pixel skipped) gives the whole frame's numbers to float32 rounding (1e-5: these
    random weights make activations of ~100; a halo one pixel short differs by ~0.1),
    perspective and orthographic, with two objects and an empty band between them (whole
    tiles skipped), on the network's own edge net (7 dilated layers, radius 23 > tile)."""
    model = FNINet(NetConfig(edge_width=6, edge_dilations=(1, 2, 4, 8, 4, 2, 1))).eval()
    torch.manual_seed(1)
    for p in model.edges.parameters():
        torch.nn.init.normal_(p, std=0.3)
    for seed, ortho in ((5, 0.0), (6, 1.0)):
        sc = make_scene(seed, 90, 120, ortho_prob=ortho, fold_prob=1.0)
        mask = sc.mask.copy()
        mask[:, 50:80] = False                               # an empty band: tiles skipped
        inp = build_input(sc.normals, None, mask, sc.K, pixel_size=None if sc.K is not None else 1 / 120)
        lv = _level(inp)
        with torch.no_grad():
            z, _ = model.capped(lv, 64, attention=False)
            whole = torch.sigmoid(model.edges(z, lv)) * lv.mask
            tiled = model.edge_probabilities(z, lv, tile=tile)
            one = model.edge_probabilities(z, lv, tile=None)
        assert float(whole.std()) > 0.05                     # the net says something
        assert float((tiled - whole).abs().max()) < 1e-5
        assert float((one - whole).abs().max()) < 1e-5
        assert torch.all(tiled[0][:, torch.from_numpy(~inp.mask)] == 0)


def test_edge_weights_are_bini_layout_and_reach_stage2():
    from dataclasses import replace

    from fnin_cli.config import DEFAULT

    paired = replace(DEFAULT, one_shot=replace(DEFAULT.one_shot, sliver_gate=None))   # the gate: test_sliver_gate.py
    model = _edge_model()
    sc = make_scene(7, 40, fold_prob=1.0)
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    s = NormalSystem(inp.normals, inp.mask, inp.camera)
    z_img, om, p = inference.network_outputs(model, inp, "cpu")
    assert z_img.dtype == p.dtype == np.float32      # whole frames stay float32; Stage II converts its pixels
    assert om is None and p.shape == (2, 40, 40)
    w = stage2.edge_weights(s, p, paired.one_shot)
    np.testing.assert_allclose(w["u+"] + w["u-"], 1.0)
    np.testing.assert_allclose(w["v-"], stage2.sharpen(p[1][inp.mask].astype(np.float64), DEFAULT.one_shot.edge_sharpness))
    unsharpened = replace(paired.one_shot, edge_sharpness=1.0)
    np.testing.assert_allclose(stage2.edge_weights(s, p, unsharpened)["v-"], p[1][inp.mask])
    r = integrate(inp, "fnin", model=model, refine=0, config=paired)       # the one-shot: Stage II alone
    z = stage2.stage2(s, w, DataTerm(1e-3, z_img[inp.mask]), z_img[inp.mask])
    np.testing.assert_allclose(r.z[inp.mask], z, rtol=1e-6, atol=1e-9)
    # without an edge net the attention map still gives the weights
    plain = FNINet(NetConfig()).eval()
    assert inference.network_outputs(plain, inp, "cpu")[2] is None


def _save_stage1(tmp_path):
    """A small Stage I model exported as `fnin train` would, to start the edges stage from."""
    cfg = TrainConfig(steps=1, batch=1, res=32, fine_steps=0, val_every=10**9, ckpt_every=10**9, threads=1,
                      net=NetConfig(width=4, modes=4, proj=8, att_width=4, min_side=16))
    torch.manual_seed(0)
    model = FNINet(cfg.net)
    log = {"loss": [[1, 1.0]], "val": [[1, 0.9]], "seconds": 1.0}
    out = tmp_path / "base" / "fnin.safetensors"
    export(model, cfg, log, out, command="fnin train (test)")
    return out, model


def test_edges_stage_trains_only_the_edge_net_and_lowers_its_loss(tmp_path):
    base, stage1 = _save_stage1(tmp_path)
    cfg = TrainConfig(stage="edges", base=str(base), steps=12, batch=2, res=32, fine_steps=0, lr=5e-3, warmup=1,
                      val_every=6, val_scenes=2, val_res=32, ckpt_every=6, threads=1, fold_prob=1.0, side=16,
                      net=NetConfig(edge_width=4, edge_dilations=(1, 2, 1)))
    out = tmp_path / "run" / "fnin.safetensors"
    summary = train(cfg, tmp_path / "run", out=out, command="fnin train --stage edges (test)")
    log = json.loads((tmp_path / "run" / "log.json").read_text())
    losses = [x[1] for x in log["loss"]]
    assert np.mean(losses[-4:]) < np.mean(losses[:4])
    assert len(log["val"]) == 2 and all(0 < v < 2 for _, v in log["val"])
    model = model_weights._load(str(out), "cpu")
    assert model.edges is not None and model.cfg.min_side == 16
    for name, p in stage1.state_dict().items():      # Stage I frozen, bit for bit
        assert torch.equal(model.state_dict()[name], p), name
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["base"]["card"]["command"] == "fnin train (test)" and card["sha256"] == summary["sha256"]
    md = out.with_name("MODEL_CARD.md").read_text()
    assert "## Edge net" in md and "## Stage I" in md and "fnin train (test)" in md
    # the same seed gives the same run
    train(cfg, tmp_path / "again", out=None)
    again = json.loads((tmp_path / "again" / "log.json").read_text())
    np.testing.assert_allclose([x[1] for x in again["loss"]], losses, rtol=1e-5)


def test_edges_stage_can_start_from_a_trained_edge_net(tmp_path):
    """init_edges: fine-tuning starts from that file's edge net (not a fresh one), and a
    file without a fitting edge net is refused."""
    base, _ = _save_stage1(tmp_path)
    common = dict(stage="edges", base=str(base), batch=2, res=32, fine_steps=0, lr=5e-3, warmup=1, val_every=10**9,
                  ckpt_every=10**9, threads=1, fold_prob=1.0, side=16, net=NetConfig(edge_width=4, edge_dilations=(1, 2, 1)))
    out = tmp_path / "a" / "fnin.safetensors"
    train(TrainConfig(steps=4, **common), tmp_path / "a", out=out)
    tuned = build_model(TrainConfig(steps=1, init_edges=str(out), **common))
    fresh = build_model(TrainConfig(steps=1, **common))
    trained = model_weights._load(str(out), "cpu")
    for k, v in trained.edges.state_dict().items():
        assert torch.equal(tuned.edges.state_dict()[k], v)
    assert not all(torch.equal(fresh.edges.state_dict()[k], v) for k, v in trained.edges.state_dict().items())
    # a fine-tuned model's card nests the card of the model it started from
    out2 = tmp_path / "b" / "fnin.safetensors"
    train(TrainConfig(steps=2, init_edges=str(out), **{**common, "base": str(out)}), tmp_path / "b", out=out2)
    md = out2.with_name("MODEL_CARD.md").read_text()
    assert "edge net fine-tuned from" in md and "## The model this one was fine-tuned from" in md
    assert "### Stage I (frozen while the edge net trained)" in md
    with pytest.raises(ValueError, match="no edge net of this shape"):
        build_model(TrainConfig(steps=1, init_edges=str(base), **common))


def test_resumed_run_names_its_real_start_even_if_the_base_file_was_replaced(tmp_path):
    """Regression: a resumed edges run exported the card of whatever file sat at cfg.base at
    export time; the shipped edge net was resumed from a run whose base path had since been
    overwritten by that run's own earlier output, so the card named the wrong start. The
    base is now recorded at the run's first invocation, with the commit of every invocation."""
    import hashlib
    import shutil

    base, _ = _save_stage1(tmp_path)
    start_sha = hashlib.sha256(base.read_bytes()).hexdigest()
    common = dict(stage="edges", base=str(base), batch=2, res=32, fine_steps=0, lr=5e-3, warmup=1, val_every=10**9,
                  ckpt_every=2, threads=1, fold_prob=1.0, side=16, net=NetConfig(edge_width=4, edge_dilations=(1, 2, 1)))
    first = tmp_path / "first" / "fnin.safetensors"
    train(TrainConfig(steps=2, **common), tmp_path / "run", out=first, command="fnin train --steps 2")
    for f in ("fnin.safetensors", "fnin.json"):          # ship the intermediate over the base
        shutil.copy(first.with_name(f), base.with_name(f))
    assert hashlib.sha256(base.read_bytes()).hexdigest() != start_sha
    out = tmp_path / "final" / "fnin.safetensors"
    train(TrainConfig(steps=4, **common), tmp_path / "run", out=out, command="fnin train --steps 4")
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["base"]["sha256"] == start_sha
    assert card["base"]["card"]["train_config"]["stage"] == "network"
    assert card["resumed_with"] == ["fnin train --steps 4"] and len(card["resumed_commits"]) == 1
    assert "## Stage I (frozen while the edge net trained)" in out.with_name("MODEL_CARD.md").read_text()


def test_edges_stage_rejects_weights_of_another_network(tmp_path):
    from safetensors.torch import save_file

    bad = tmp_path / "bad.safetensors"
    save_file({"x": torch.zeros(2)}, str(bad), metadata={"net": "{}"})
    with pytest.raises(ValueError, match="not Stage I weights"):
        build_model(TrainConfig(stage="edges", base=str(bad), net=NetConfig(edge_width=4)))
    notes = tmp_path / "notes.safetensors"
    notes.write_text("not a weights file")
    with pytest.raises(ValueError, match="cannot read FNIN weights"):
        build_model(TrainConfig(stage="edges", base=str(notes), net=NetConfig(edge_width=4)))
    with pytest.raises(ValueError, match="unknown stage"):
        build_model(TrainConfig(stage="both"))


# ---------------------------------------------------------------- training through the solve

def test_solve_objective_is_the_stage2_error_and_training_lowers_it(tmp_path):
    """edge_objective "solve": the loss value is the relative error of fnin's solution on
    those scenes (sharpened weights, as inference), and a short run lowers it on held-out
    scenes; the card says which objective trained it."""
    from fnin_cli.data.synthetic import relative_error
    from fnin_cli.train.losses import solve_loss

    base, _ = _save_stage1(tmp_path)
    cfg = TrainConfig(stage="edges", edge_objective="solve", base=str(base), steps=10, batch=2, res=32,
                      fine_steps=0, lr=1e-2, warmup=1, val_every=5, val_scenes=2, val_res=32, ckpt_every=5,
                      threads=1, fold_prob=1.0, side=16, net=NetConfig(edge_width=4, edge_dilations=(1, 2, 1)))
    start = build_model(TrainConfig.from_dict(cfg.to_dict()))
    seeds = [601, 602, 603, 604]
    lv, zg = make_batch(seeds, 32, fold_prob=1.0)
    with torch.no_grad():
        before = float(solve_loss(start, lv, zg, cfg))
    # the value is fnin's end-to-end error (the mask as the network saw it, no pixel dropped)
    from fnin_cli.pipeline import integrate

    errs = []
    for s in seeds:
        sc = make_scene(s, 32, fold_prob=1.0)
        inp = build_input(sc.normals, None, sc.mask, sc.K)
        if inp.mask.sum() == sc.mask.sum():
            lv1, zg1 = make_batch([s], 32, fold_prob=1.0)
            with torch.no_grad():
                errs.append((float(solve_loss(start, lv1, zg1, cfg)), relative_error(
                    integrate(inp, "fnin", model=start.eval(), solver="amg", refine=0).z[inp.mask], sc.unknown[inp.mask])))
    assert errs
    for ours, fnin in errs:
        assert abs(ours - fnin) <= 2e-3 * fnin, (ours, fnin)
    start.train()
    # its gradient descends: a few Adam steps on these scenes lower it
    opt = torch.optim.Adam([p for p in start.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(8):
        opt.zero_grad()
        solve_loss(start, lv, zg, cfg).backward()
        opt.step()
    with torch.no_grad():
        after = float(solve_loss(start, lv, zg, cfg))
    assert after < 0.97 * before
    out = tmp_path / "solve" / "fnin.safetensors"
    train(TrainConfig.from_dict({**cfg.to_dict(), "steps": 2}), tmp_path / "solve", out=out)
    md = out.with_name("MODEL_CARD.md").read_text()
    assert "differentiated through the solve" in md and "without gradient" not in md
    from fnin_cli.config import DEFAULT

    assert f"sliver-gated at t = {DEFAULT.one_shot.sliver_gate}" in md       # the solve it trained through
    from fnin_cli.train.card import _objective

    assert "an object's error above 1.0 counted as 1.0, without gradient" in _objective({**cfg.to_dict(), "solve_cap": 1.0})
    # solve_bce anchors it to BiNI's weights: the two losses added
    from fnin_cli.train.losses import edge_loss, step_loss

    anchored = TrainConfig.from_dict({**cfg.to_dict(), "solve_bce": 0.5})
    with torch.no_grad():
        np.testing.assert_allclose(float(step_loss(start, lv, zg, anchored)),
                                   float(solve_loss(start, lv, zg, cfg)) + 0.5 * float(edge_loss(start, lv, zg, cfg)),
                                   rtol=1e-6)
    with pytest.raises(ValueError, match="unknown edge_objective"):
        build_model(TrainConfig(stage="edges", base=str(base), edge_objective="mse", net=NetConfig(edge_width=4)))


def _two_object_scene():
    """A fold scene whose mask is split into two 'objects' (left and right halves), as
    numpy inputs of the solve objective, with weights and a z_R."""
    from fnin_cli.data.synthetic import scene_arrays

    n, m, z, K, pix, objects = scene_arrays(make_scene(621, 40, 48, fold_prob=1.0))
    mask = m > 0
    objects = np.where(mask, (np.arange(48)[None, :] >= 24).astype(np.int32), -1)
    rng = np.random.default_rng(0)
    w = rng.uniform(0.1, 0.9, (2,) + mask.shape) * mask
    zr = (z + 0.05 * rng.standard_normal(z.shape)) * mask
    return (n.transpose(1, 2, 0), mask, K, float(pix)), w, zr, z, objects


def test_solve_objective_aligns_each_object_on_its_own():
    """With object ids the solve objective is the mean over objects of each object's
    relative error (its own mean removed): an offset of one object's true depth changes
    nothing, whereas the whole-scene error changes; its gradient is the derivative of that
    loss (finite differences); one object is the whole-scene objective, bit for bit."""
    from fnin_cli.train.losses import _scene_solve_error

    args, w, zr, z, objects = _two_object_scene()
    mask = args[1]
    loss, grad = _scene_solve_error(*args, w, zr, z, objects)
    whole, _ = _scene_solve_error(*args, w, zr, z, None)
    moved = z + 0.3 * (objects == 1)
    assert _scene_solve_error(*args, w, zr, moved, objects)[0] == pytest.approx(loss, rel=1e-9)
    assert abs(_scene_solve_error(*args, w, zr, moved, None)[0] - whole) > 0.01
    rng = np.random.default_rng(1)
    for r, c in np.argwhere(mask)[rng.choice(int(mask.sum()), 4, replace=False)]:
        for ch in (0, 1):
            wp, wm = w.copy(), w.copy()
            wp[ch, r, c] += 1e-5
            wm[ch, r, c] -= 1e-5
            fd = (_scene_solve_error(*args, wp, zr, z, objects)[0] - _scene_solve_error(*args, wm, zr, z, objects)[0]) / 2e-5
            assert fd == pytest.approx(grad[ch, r, c], rel=1e-2, abs=1e-7)   # PCG to 1e-6: FD noise ~1e-8
    one = np.where(mask, 0, -1)
    assert _scene_solve_error(*args, w, zr, z, one)[0] == whole
    assert np.array_equal(_scene_solve_error(*args, w, zr, z, one)[1], _scene_solve_error(*args, w, zr, z, None)[1])


def test_solve_cap_counts_an_object_over_it_at_the_cap_without_gradient():
    """solve_cap: an object whose error exceeds the cap adds cap / objects to the loss and
    nothing to the gradient; a cap above every object's error changes nothing."""
    from fnin_cli.train.losses import _scene_solve_error

    args, w, zr, z, objects = _two_object_scene()
    moved = z + 5.0 * (objects == 1) * np.linspace(0, 1, z.shape[1])[None, :]   # object 1 far off
    loss, grad = _scene_solve_error(*args, w, zr, moved, objects)
    assert _scene_solve_error(*args, w, zr, moved, objects, 1e6)[0] == loss
    only0 = np.where(objects == 0, 0, -1)
    e0, g0 = _scene_solve_error(*args, w, zr, moved, only0)
    e1 = 2 * loss - e0
    cap = (e0 + e1) / 2
    assert e1 > 3 * e0
    capped, gcap = _scene_solve_error(*args, w, zr, moved, objects, cap)
    assert capped == pytest.approx((e0 + cap) / 2, rel=1e-12)
    np.testing.assert_allclose(gcap, g0 / 2, rtol=1e-6, atol=1e-12)   # object 0's gradient alone
    none, gnone = _scene_solve_error(*args, w, zr, moved, objects, e0 / 2)
    assert none == pytest.approx(e0 / 2) and not gnone.any()


def test_object_relative_error_scores_objects_apart_and_skips_tiny_ones():
    from fnin_cli.data.synthetic import MIN_OBJECT_PIXELS, object_relative_error, relative_error

    rng = np.random.default_rng(2)
    gt = rng.standard_normal(3 * MIN_OBJECT_PIXELS + 5)
    objects = np.repeat([0, 1, 2, 3], [MIN_OBJECT_PIXELS] * 3 + [5])   # a 5-pixel object: not scored on its own
    z = gt + np.where(objects == 1, 7.0, 0.0) + 0.1 * rng.standard_normal(gt.size)
    per = [relative_error(z[objects == o], gt[objects == o]) for o in (0, 1, 2)]
    assert object_relative_error(z, gt, objects) == pytest.approx(np.mean(per), rel=1e-12)
    assert object_relative_error(z, gt, objects) < 0.2 < relative_error(z, gt)
    assert object_relative_error(z, gt, None) == relative_error(z, gt)
    assert object_relative_error(z[:50], gt[:50], objects[:50]) == relative_error(z[:50], gt[:50])   # none large enough


def test_solve_objective_in_worker_processes_gives_the_same_numbers(tmp_path):
    """solve_workers > 0 runs the per-scene solves in spawned processes: the loss and its
    gradient must be bit for bit those of the in-loop solves (training stays deterministic)."""
    from fnin_cli.train.losses import close_solve_pools, solve_loss

    base, _ = _save_stage1(tmp_path)
    cfg = TrainConfig(stage="edges", edge_objective="solve", base=str(base), res=32, threads=1,
                      fold_prob=1.0, side=16, net=NetConfig(edge_width=4, edge_dilations=(1, 2, 1)))
    model = build_model(TrainConfig.from_dict(cfg.to_dict()))
    lv, zg = make_batch([611, 612, 613], 32, fold_prob=1.0)
    out = []
    for workers in (0, 2):
        model.zero_grad()
        loss = solve_loss(model, lv, zg, TrainConfig.from_dict({**cfg.to_dict(), "solve_workers": workers}))
        loss.backward()
        out.append((float(loss), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    close_solve_pools()
    assert out[0][0] == out[1][0]
    assert out[0][1] and all(torch.equal(a, b) for a, b in zip(out[0][1], out[1][1]))
    assert any(float(g.abs().max()) > 0 for g in out[0][1])
