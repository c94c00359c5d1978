"""The airspeed velocity (asv) suite: absolute timings of toolcycle's core operations.

``asv.conf.json`` at the repository root points asv here (``benchmark_dir``). asv
imports this folder as a package of its own and every module in it, and times the
``time_*`` methods, runs ``timeraw_*`` code in fresh interpreters and records what
``track_*`` and ``peakmem_*`` return, once per commit it is asked about, so that
``asv continuous main HEAD`` can say which of them a change made slower. The
side-by-side comparisons with other libraries and the targets stay with
``python -m benchmarks`` (the modules one folder up), which measures ratios in one
process instead. See ``benchmarks/README.md``.
"""
