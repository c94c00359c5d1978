"""Hypothesis strategies for the property tests, each documented."""

from __future__ import annotations

from hypothesis import strategies as st

tool_kinds = st.sampled_from(["reads", "writes", "async", "fails_activation"])
"""What a generated tool does: read, write, run async, or fail every activation."""

plan_flags = st.fixed_dictionaries({"read_only": st.booleans()})
"""The flags a generated plan is opened with."""

thread_counts = st.integers(min_value=2, max_value=4)
"""How many threads make concurrent calls in one step."""
