"""A skills folder whose tools wait for a tool search (defer_loading on the source)."""

from __future__ import annotations

from pathlib import Path

from toolcycle import ToolRuntime
from toolcycle.sources.skills import SkillDirectory

from .conftest import make_skill


def test_defer_loading_on_the_folder_defers_every_skill(tmp_path: Path) -> None:
    """SkillDirectory(defer_loading=True): each skill is found by a search, not listed."""
    make_skill(tmp_path, "pdf-forms", description="Fill in PDF forms from field values.")
    make_skill(tmp_path, "slide-decks", description="Build slide decks from an outline.")
    with ToolRuntime() as runtime:
        runtime.register_source(SkillDirectory(tmp_path, defer_loading=True))
        assert all(d.defer_loading for d in runtime.descriptors())
        with runtime.plan(read_only=True) as ctx:
            listed = [d["function"]["name"] for d in runtime.tool_definitions(ctx)]
            found = runtime.call(
                {"name": "search_tools", "arguments": {"query": "fill a pdf form"}}, ctx
            )
    assert listed == ["search_tools"]
    assert found.output["tools"][0]["name"] == "pdf-forms"
