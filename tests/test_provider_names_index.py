"""ProviderNames: the way back from provider names, kept per format and registry generation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolcycle import NullTracer, ToolRuntime, tool
from toolcycle.agent._names import FORMATS, ProviderNames, provider_name, resolve

_NAMES = st.lists(
    st.text(alphabet="ab.-_ é/", min_size=1, max_size=70).filter(
        lambda n: n == n.strip() and n.isprintable()
    ),
    min_size=1,
    max_size=8,
    unique=True,
)


@given(names=_NAMES, data=st.data())
def test_the_kept_maps_answer_as_resolve_does(names: list[str], data: st.DataObject) -> None:
    """For any registered names, a provider name (or an unknown one) resolves the same way."""
    fmt = data.draw(st.sampled_from((*FORMATS, "plain")))
    asked = data.draw(
        st.one_of(
            st.sampled_from([provider_name(n, f) for n in names for f in FORMATS]),
            st.text(max_size=10),
        )
    )
    if asked in names:
        return  # a registered name as it is is looked up before either
    assert ProviderNames().resolve(asked, fmt, 0, lambda: names) == resolve(asked, fmt, names)


def test_the_map_is_built_once_per_generation_and_format() -> None:
    """Repeated lookups list the names once; a new generation or format lists them again."""
    listed: list[int] = []

    def registered() -> list[str]:
        listed.append(1)
        return ["notes.save"]

    names = ProviderNames()
    safe = provider_name("notes.save", "openai")
    for _ in range(3):
        assert names.resolve(safe, "openai", 1, registered) == "notes.save"
        assert names.resolve("made_up", "openai", 1, registered) is None
    assert len(listed) == 1
    assert names.resolve(safe, "anthropic", 1, registered) == "notes.save"
    assert names.resolve(safe, "openai", 2, registered) == "notes.save"
    assert len(listed) == 3


def test_a_tool_registered_after_an_unknown_name_is_found_by_its_provider_name() -> None:
    """The runtime's kept map follows registration: a later tool's safe name resolves."""

    @tool(writes=False, name="notes.read")
    def read() -> str:
        """Read the notes."""
        return "notes"

    with ToolRuntime(tracer=NullTracer()) as runtime, runtime.plan() as ctx:
        safe = provider_name("notes.read", "openai")
        call = {"id": "c1", "type": "function", "function": {"name": safe, "arguments": "{}"}}
        assert runtime.call(call, ctx).error_type == "ToolNotFoundError"
        runtime.register(read)
        assert runtime.call(call, ctx).output == "notes"
        runtime.unregister("notes.read")
        assert runtime.call(call, ctx).error_type == "ToolNotFoundError"


def test_resolve_takes_a_registered_name_as_it_is() -> None:
    """A name that is registered resolves to itself, in any format."""
    assert resolve("notes.save", "openai", ["notes.save"]) == "notes.save"
