"""`fnin integrate` as a Python API: options, planning, memory check, runner, writing, previews.

The CLI is a thin layer over three steps::

    from fnin_cli.batch.options import Options
    from fnin_cli.batch.plan import expand_inputs, plan_jobs
    from fnin_cli.batch.runner import run_jobs
    opts = Options(method="wls")
    jobs = plan_jobs(expand_inputs(["scans/*/normal_map.png"]), out_dir="out", fmt="ply")
    records = run_jobs(jobs, opts, workers=2)   # one dict per input, in input order

Each input is read by :func:`fnin_cli.prepare.prepare` (also usable on its own).
"""
