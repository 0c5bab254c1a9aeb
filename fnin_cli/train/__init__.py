"""`fnin train`: training FNIN on synthetic scenes.

Two stages, each its own run: ``stage="network"`` trains Stage I (the FNO pyramid and
its attention net) with the detail-weighted loss; ``stage="edges"`` freezes a trained
Stage I (``base``) and trains the full-resolution edge net. See docs/training.md.

- :mod:`.config` — :class:`~.config.TrainConfig`; :mod:`.feed` — the scenes;
  :mod:`.losses`; :mod:`.build` — the model a stage starts from;
  :mod:`.loop` — ``train``, validation, checkpoints, export; :mod:`.card` — the model card.
"""
