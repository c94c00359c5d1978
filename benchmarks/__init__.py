"""Benchmarks of toolcycle, asv-style: ``time_*`` functions run by ``python -m benchmarks``."""
