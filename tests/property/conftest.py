"""Hypothesis settings for the property tests: fast and repeatable by default.

``toolcycle`` (the default) runs a fixed, derandomised set of examples so that the
suite stays quick and a red run can be repeated; thread interleavings still vary
from run to run. ``toolcycle-explore`` draws ten times as many random examples,
for hunting bugs locally::

    TOOLCYCLE_HYPOTHESIS_PROFILE=toolcycle-explore python -m pytest tests/property

Neither profile keeps an example database, so nothing is written into the tree.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "toolcycle",
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    database=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "toolcycle-explore",
    max_examples=400,
    stateful_step_count=40,
    deadline=None,
    database=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("TOOLCYCLE_HYPOTHESIS_PROFILE", "toolcycle"))
