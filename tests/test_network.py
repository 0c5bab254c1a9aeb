"""Stage I network: spectral conv, resolution independence, gradients, training, bundled weights."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from fnin_cli.model import inference
from fnin_cli.solvers import stage2
from fnin_cli.model import weights as model_weights
from fnin_cli.model.fnin_net import FNINet
from fnin_cli.model.config import NetConfig
from fnin_cli.model.layers import SpectralConv2d, spectral_conv_reference
from fnin_cli.train.losses import detail_weighted_loss
from fnin_cli.pipeline import build_input
from fnin_cli.data.synthetic import make_scene, relative_error
from fnin_cli.train.config import TrainConfig
from fnin_cli.train.feed import make_batch
from fnin_cli.train.loop import train

torch.set_num_threads(1)


@pytest.mark.parametrize("tucker", [0.0, 0.5])
@pytest.mark.parametrize("shape", [(16, 16), (20, 13), (64, 48)])
def test_spectral_conv_matches_fft_reference(tucker, shape):
    torch.manual_seed(0)
    layer = SpectralConv2d(3, 4, modes=6, tucker=tucker)
    x = torch.randn(2, 3, *shape)
    out = layer(x)
    ref = spectral_conv_reference(x, layer)
    assert out.shape == (2, 4, *shape)
    assert torch.allclose(out, ref, atol=1e-5 * ref.abs().max().item())


@pytest.mark.parametrize("cout", [4, 12])
def test_one_image_inference_path_matches_the_reference(cout):
    """One image without autograd mixes channels in chunks of MIX_CHUNK output channels
    (docs/decisions.md#fresh-pages): the same layer, whatever the chunk boundaries."""
    torch.manual_seed(1)
    layer = SpectralConv2d(5, cout, modes=6, tucker=0.5)
    x = torch.randn(1, 5, 20, 27)
    with torch.no_grad():
        out = layer(x)
        ref = spectral_conv_reference(x, layer)
    assert torch.allclose(out, ref, atol=1e-5 * ref.abs().max().item())
    assert torch.allclose(out, layer(x).detach(), atol=1e-5 * ref.abs().max().item())   # the autograd path


def test_inference_edge_features_are_the_autograd_paths_bit_for_bit():
    """edge_features without autograd (in place, one output tensor) gives exactly the
    numbers of the autograd path the edge net was trained with."""
    from fnin_cli.data.synthetic import make_scene
    from fnin_cli.model.inference import _level_from_input
    from fnin_cli.model.layers import EDGE_FEATURES, edge_features
    from fnin_cli.pipeline import build_input

    for seed, ortho in ((3, 0.0), (4, 1.0)):
        sc = make_scene(seed, 48, 56, ortho_prob=ortho, fold_prob=1.0)
        lv = _level_from_input(build_input(sc.normals, None, sc.mask, sc.K,
                                           pixel_size=None if sc.K is not None else 1 / 56), "cpu")
        z = torch.randn(1, 1, 48, 56) * 0.1 * lv.mask
        with torch.no_grad():
            fast = edge_features(z, lv)
        slow = edge_features(z.requires_grad_(True), lv)
        assert fast.shape == (1, EDGE_FEATURES, 48, 56)
        assert torch.equal(fast, slow.detach())


def test_spectral_conv_equals_dense_circular_convolution():
    """With weights Hermitian in the DC column, the layer is exactly a circular
    convolution with the spatial kernel k = irfft2(W): compare with a dense sum."""
    torch.manual_seed(1)
    h = w = 8
    layer = SpectralConv2d(1, 1, modes=4, tucker=0.0)   # rows 0..7 all kept, cols 0..3
    with torch.no_grad():
        wr, wi = layer.weight[0, 0, 0], layer.weight[1, 0, 0]   # (8, 4) real / imag
        for r in range(h):
            wr[(-r) % h, 0] = wr[r, 0]
            wi[(-r) % h, 0] = -wi[r, 0]
        wi[0, 0] = 0.0
        wi[4, 0] = 0.0
    W = torch.complex(wr.detach().clone(), wi.detach().clone()).to(torch.complex128)
    kspec = torch.zeros(h, w // 2 + 1, dtype=torch.complex128)
    kspec[:, :4] = W
    k = torch.fft.irfft2(kspec, s=(h, w))
    x = torch.randn(1, 1, h, w)
    xx = x[0, 0].double()
    direct = torch.zeros(h, w, dtype=torch.float64)
    for a in range(h):
        for b in range(w):
            direct += k[a, b] * torch.roll(xx, shifts=(a, b), dims=(0, 1))
    out = layer(x)[0, 0].double()
    assert torch.allclose(out, direct, atol=1e-5 * direct.abs().max().item())


@pytest.mark.parametrize("hw", [(64, 64), (128, 128), (512, 612)])
def test_network_resolution_independent(hw):
    torch.manual_seed(0)
    model = FNINet(NetConfig(width=8, modes=6, proj=8, att_width=4)).eval()
    sc = make_scene(3, *hw)
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    z, om = inference.stage1(model, inp, "cpu", side=10_000)
    assert z.shape == hw and om.shape == hw
    assert np.all(np.isfinite(z[inp.mask])) and np.all((om[inp.mask] >= 0) & (om[inp.mask] <= 1))


def test_gradients_flow_to_every_parameter():
    torch.manual_seed(0)
    model = FNINet(NetConfig(width=8, modes=6, proj=8, att_width=4))
    lv, zg = make_batch([1, 2], 96)
    outs = model(lv)
    loss = sum(detail_weighted_loss(z, om, torch.nn.functional.interpolate(zg, size=z.shape[-2:]), lvl).mean()
               for lvl, z, om in outs)
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not missing
    assert all(p.grad.abs().sum() > 0 for n, p in model.named_parameters() if "initial" in n or "iterative" in n)


def test_tiny_training_run_decreases_loss(tmp_path):
    cfg = TrainConfig(seed=1, steps=30, batch=4, res=32, lr=3e-3, warmup=1, decay_every=1000, val_every=30,
                      val_scenes=4, val_res=32, ckpt_every=15, threads=1,
                      net=NetConfig(width=8, modes=6, proj=16, att_width=4, min_side=16))
    summary = train(cfg, tmp_path / "run", out=tmp_path / "w.safetensors")
    log = json.loads((tmp_path / "run" / "log.json").read_text())
    losses = np.array([x[1] for x in log["loss"]])
    assert len(losses) == 30
    assert losses[-10:].mean() < 0.8 * losses[:5].mean()
    # exported weights load through the public loader and run
    model = model_weights.load_model(tmp_path / "w.safetensors", "cpu")
    assert model.cfg.width == 8
    assert (tmp_path / "w.json").exists() and (tmp_path / "w_curve.png").exists()
    assert summary["steps_done"] == 30


def test_training_resumes_from_checkpoint(tmp_path):
    base = dict(seed=2, batch=2, res=32, warmup=1, val_every=10, val_scenes=2, val_res=32, ckpt_every=5,
                threads=1, net=NetConfig(width=8, modes=4, proj=8, att_width=4, min_side=16))
    full = tmp_path / "full"
    train(TrainConfig(steps=10, **base), full)
    part = tmp_path / "part"
    train(TrainConfig(steps=5, **base), part, command="fnin train --steps 5")
    train(TrainConfig(steps=10, **base), part, out=tmp_path / "w.safetensors",
          command="fnin train --steps 10")  # resumes at step 5
    card = json.loads((tmp_path / "w.json").read_text())   # the card names every invocation
    assert card["command"] == "fnin train --steps 5" and card["resumed_with"] == ["fnin train --steps 10"]
    assert "resumed by `fnin train --steps 10`" in (tmp_path / "MODEL_CARD.md").read_text()
    a = json.loads((full / "log.json").read_text())["loss"]
    b = json.loads((part / "log.json").read_text())["loss"]
    assert [s for s, _ in b] == list(range(1, 11))
    np.testing.assert_allclose([x for _, x in a], [x for _, x in b], rtol=1e-5)


def test_fnin_commit_overrides_the_recorded_commit(monkeypatch):
    """Regression: cards trained on the lent GPU recorded a stale commit from that copy's .git."""
    from fnin_cli.train.loop import git_commit

    monkeypatch.setenv("FNIN_COMMIT", "abc1234")
    assert git_commit() == "abc1234"
    monkeypatch.delenv("FNIN_COMMIT")
    assert git_commit() != "abc1234"


def test_max_seconds_bounds_this_invocation_not_the_resumed_total(tmp_path):
    """Regression: resuming a run whose logged time exceeded --max-minutes stopped after
    one step (the limit was compared with the total time of all invocations)."""
    cfg = dict(seed=2, batch=2, res=32, warmup=1, val_every=100, val_scenes=2, val_res=32, ckpt_every=2,
               threads=1, net=NetConfig(width=8, modes=4, proj=8, att_width=4, min_side=16))
    run = tmp_path / "run"
    train(TrainConfig(steps=2, **cfg), run)
    log = json.loads((run / "log.json").read_text())
    log["seconds"] = 1e6  # as if the first part had trained for days
    (run / "log.json").write_text(json.dumps(log))
    summary = train(TrainConfig(steps=6, **cfg), run, max_seconds=600)
    assert summary["steps_done"] == 6


TINY = dict(seed=3, batch=3, res=32, warmup=1, val_every=4, val_scenes=2, val_res=32, ckpt_every=100,
            threads=1, net=NetConfig(width=8, modes=4, proj=8, att_width=4, min_side=16))


def test_scene_workers_give_the_same_run(tmp_path):
    """Scenes rendered ahead by worker processes are the scenes of the in-loop feed."""
    train(TrainConfig(steps=6, workers=0, **TINY), tmp_path / "inline")
    train(TrainConfig(steps=6, workers=2, **TINY), tmp_path / "pool")
    a = json.loads((tmp_path / "inline" / "log.json").read_text())
    b = json.loads((tmp_path / "pool" / "log.json").read_text())
    assert a["loss"] == b["loss"] and a["val"] == b["val"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_training_tracks_cpu_training(tmp_path):
    """The same run on the GPU (TF32 off) logs the CPU's losses to float32 round-off."""
    train(TrainConfig(steps=6, **TINY), tmp_path / "cpu")
    train(TrainConfig(steps=6, device="cuda", workers=2, **TINY), tmp_path / "gpu", out=tmp_path / "w.safetensors")
    a = json.loads((tmp_path / "cpu" / "log.json").read_text())
    b = json.loads((tmp_path / "gpu" / "log.json").read_text())
    np.testing.assert_allclose([x for _, x in a["loss"]], [x for _, x in b["loss"]], rtol=1e-3)
    assert model_weights.load_model(tmp_path / "w.safetensors", "cpu").cfg.width == 8


# ------------------------------------------------------------------ bundled weights

CARD = model_weights.DEFAULT_WEIGHTS.with_suffix(".json")


def test_bundled_weights_exist_with_model_card():
    assert model_weights.DEFAULT_WEIGHTS.exists(), "ship fnin_cli/weights/fnin.safetensors"
    card = json.loads(CARD.read_text())
    for key in ("command", "commit", "train_config", "steps", "wall_seconds", "sha256", "val_rel_error"):
        assert key in card
    import hashlib

    assert hashlib.sha256(model_weights.DEFAULT_WEIGHTS.read_bytes()).hexdigest() == card["sha256"]


def test_bundled_stage1_beats_trivial_baseline_on_held_out_scenes():
    """Stage I alone: relative error < 0.6 of the constant-depth answer's (1.0) on
    held-out synthetic scenes (seeds never used in training or validation)."""
    model = model_weights.load_model(None, "cpu")
    errs = []
    for i in range(8):
        sc = make_scene(777_000_000 + i, 128)
        inp = build_input(sc.normals, None, sc.mask, sc.K)
        z, _ = inference.stage1(model, inp, "cpu")
        m = inp.mask
        errs.append(relative_error(z[m], sc.unknown[m]))
    assert np.median(errs) < 0.6, errs


def _shipped_cards() -> dict:
    """The shipped card and the cards nested in it, newest first: the edge net trained
    through the solve, the cross-entropy fine-tuning it started from, the edge net that
    one started from (trained fresh on the shipped Stage I), and the Stage I card."""
    card = json.loads(CARD.read_text())
    chain = []
    while card is not None:
        chain.append(card)
        card = (card.get("base") or {}).get("card")
    assert [c["train_config"].get("stage", "network") for c in chain] == ["edges", "edges", "edges", "network"]
    assert chain[0]["train_config"]["edge_objective"] == "solve" and not chain[2]["train_config"].get("init_edges")
    return dict(zip(("solve", "finetune", "edges", "stage1"), chain))


# the edge net each fine-tuning started from (the one of the model below it), in tests/data
START = {"finetune": "edge_net_start.safetensors", "solve": "edge_net_finetune512.safetensors"}


@pytest.mark.parametrize("which", ["stage1", "edges", "finetune", "solve"])
def test_training_is_deterministic_and_matches_model_card(tmp_path, which):
    """Re-run each shipped training run's config for a few steps: the first logged losses
    match its card. The edges runs start from the Stage I inside the shipped file; each
    fine-tuning from the edge net it started from, shipped beside it (START). The solve
    objective applies the sliver gate its card names (none: trained before the gate)."""
    card = _shipped_cards()[which]
    cfg = TrainConfig.from_dict(card["train_config"])
    cfg.solve_gate = card.get("stage2_sliver_gate")   # the gate its solve objective applied (None: before it)
    n = 3
    cfg.steps, cfg.val_every, cfg.ckpt_every = n, 10**9, 10**9
    trained_on = cfg.device
    cfg.device, cfg.workers = "cpu", 0   # same scenes; the re-run is on this machine's CPU
    if which != "stage1":
        cfg.base = str(model_weights.DEFAULT_WEIGHTS)
    if which in START:
        cfg.init_edges = str(Path(__file__).parent / "data" / START[which])
    train(cfg, tmp_path / "run")
    log = json.loads((tmp_path / "run" / "log.json").read_text())
    # a GPU-trained card: float32 sums in another order, so agreement to round-off only.
    # The H200-trained edge net's first losses sit a steady 0.7% above this CPU re-run
    # (0.9048 vs 0.8988, ...): its features multiply z_R's differences by the focal length,
    # so GPU float differences in Stage I show; cause not pinned down (no GPU time left).
    # Another seed moves them by 5-7%, so 1% still pins data, seed and initialisation.
    rtol = 1e-4 if trained_on == "cpu" else (1e-2 if which == "edges" else 1e-3)
    np.testing.assert_allclose([x[1] for x in log["loss"][:n]], card["first_losses"][:n], rtol=rtol)


def test_bundled_edge_net_beats_uniform_weights_on_held_out_fold_scenes():
    """The shipped edge net's weights make one Stage II solve clearly better than all-ones
    weights (wls with the same prior) on held-out self-occluding scenes: an untrained or
    broken edge net fails this."""
    from fnin_cli.solvers.system import DataTerm, NormalSystem

    model = model_weights.load_model(None, "cpu")
    assert model.edges is not None
    ours, uniform = [], []
    for i in range(6):
        sc = make_scene(778_000_000 + i, 192, fold_prob=1.0)
        inp = build_input(sc.normals, None, sc.mask, sc.K)
        s = NormalSystem(inp.normals, inp.mask, inp.camera)
        z_img, _, p = inference.network_outputs(model, inp, "cpu")
        zr, gt = z_img[s.mask], sc.unknown[s.mask]
        for weights, acc in ((stage2.edge_weights(s, p), ours), (None, uniform)):
            z, _ = s.solve(weights, DataTerm(1e-3, zr), x0=zr, method="direct")
            acc.append(relative_error(z, gt))
    assert np.mean(ours) < 0.9 * np.mean(uniform), (ours, uniform)


def test_fast_asinh_equals_torch_asinh():
    """network._asinh (the edge features' compression, written out for speed) matches
    torch.asinh to float32 rounding across 9 decades, signs and zero."""
    from fnin_cli.model.layers import _asinh

    x = torch.cat([torch.randn(2000, generator=torch.Generator().manual_seed(0)) * s
                   for s in (1e-5, 1e-2, 1.0, 1e2, 1e4)] + [torch.zeros(3)])
    ref = torch.asinh(x)
    assert torch.all(torch.sign(_asinh(x)) == torch.sign(ref))
    assert float(((_asinh(x) - ref).abs() / ref.abs().clamp_min(1e-30)).max()) < 1e-6


def test_legacy_config_keys_load_at_zero_and_are_refused_otherwise(tmp_path):
    """Weights written while learned rounds / the coarse edge branch / the context U-Net
    existed carry their keys at 0: they load; a non-zero value names the removed feature."""
    from safetensors.torch import save_file

    from fnin_cli.errors import FninError
    from fnin_cli.model.config import net_config

    cfg = net_config({"edge_width": 4, "edge_rounds": 0, "edge_coarse": 0, "edge_coarse_dilations": [1, 2],
                      "edge_context": 0, "edge_context_width": 16})
    assert cfg.edge_width == 4
    with pytest.raises(FninError, match="edge_context.*context U-Net"):
        net_config({"edge_context": 5, "edge_context_width": 16})
    with pytest.raises(FninError, match="edge_rounds.*removed"):
        net_config({"edge_rounds": 1})
    with pytest.raises(FninError, match="edge_coarse.*removed"):
        net_config({"edge_coarse": 4})
    model = FNINet(NetConfig())
    bad = tmp_path / "rounds.safetensors"
    save_file(model.state_dict(), str(bad), metadata={"net": json.dumps({"edge_rounds": 2})})
    with pytest.raises(FninError, match="learned rounds"):
        model_weights._load(str(bad), "cpu")
    for removed in ("coarse", "context"):
        with pytest.raises(ValueError, match="edge_train"):
            TrainConfig.from_dict({"edge_train": removed})
    assert TrainConfig.from_dict({"edge_train": "all", "init_round": "edges"}).stage == "network"
