"""Everything around the calls: runtimes, registration, plans, activation, tool definitions."""

from __future__ import annotations

from toolcycle import NullTracer, ProviderFormat, ToolDescriptor, ToolRuntime, tool

from .common import PARAMS, AddTool, AsyncAddTool, add_fields, add_fields_async

TOOL_COUNT = 20
"""Tools registered for the tool definitions: a typical agent's toolbox."""


class Runtime:
    """Building a runtime and registering tools in it."""

    def setup(self) -> None:
        self.runtime = ToolRuntime(tracer=NullTracer())
        self.runtime.register(AddTool())  # its schemas compiled once, as a second copy finds them

    def teardown(self) -> None:
        self.runtime.close()

    def time_new_runtime(self) -> None:
        """``ToolRuntime()`` with a null tracer, then ``close()``."""
        ToolRuntime(tracer=NullTracer()).close()

    def time_register_unregister(self) -> None:
        """``register`` of a hand-written tool whose schemas are known, then ``unregister``."""
        self.runtime.register(_Renamed())
        self.runtime.unregister("add_again")

    def time_register_tool_function(self) -> None:
        """``register`` of a fresh ``@tool`` function (schema from its signature), then removal."""
        self.runtime.register(tool(name="add_fields_again")(add_fields))
        self.runtime.unregister("add_fields_again")


class _Renamed(AddTool):
    """The small tool under another name, so that it can sit beside the first."""

    def discover(self) -> ToolDescriptor:
        return super().discover().model_copy(update={"name": "add_again"})


class Plans:
    """A plan from open to end, with and without tools activated in it."""

    def setup(self) -> None:
        self.runtime = runtime = ToolRuntime(tracer=NullTracer())
        runtime.register(AddTool())
        runtime.register(AsyncAddTool())
        with runtime.plan() as ctx:
            runtime.execute("add", PARAMS, ctx)

    def teardown(self) -> None:
        self.runtime.close()

    def time_open_end(self) -> None:
        """``new_context`` then ``end_plan``, nothing activated."""
        runtime = self.runtime
        runtime.end_plan(runtime.new_context())

    def time_activate_end(self) -> None:
        """Open a plan, ``activate`` one tool, end the plan (which deactivates it)."""
        runtime = self.runtime
        ctx = runtime.new_context()
        runtime.activate("add", ctx)
        runtime.end_plan(ctx)

    def time_first_call(self) -> None:
        """Open a plan, one ``execute`` (activating the tool on the way), end the plan."""
        runtime = self.runtime
        with runtime.plan() as ctx:
            runtime.execute("add", PARAMS, ctx)


class ToolDefinitions:
    """What a model is offered: the definitions of a plan's tools in a provider's format."""

    params = ("openai", "anthropic")
    param_names = ("format",)

    def setup(self, format: ProviderFormat) -> None:
        self.runtime = runtime = ToolRuntime(tracer=NullTracer())
        for index in range(TOOL_COUNT // 2):
            runtime.register(tool(name=f"add_{index}")(add_fields))
            runtime.register(tool(name=f"aadd_{index}")(add_fields_async))
        self.ctx = runtime.new_context("asv")
        if len(runtime.tool_definitions(self.ctx, format=format)) != TOOL_COUNT:
            raise RuntimeError("not every tool is defined")

    def teardown(self, format: str) -> None:
        self.runtime.close()

    def time_tool_definitions(self, format: str) -> None:
        """The definitions of 20 ``@tool`` functions."""
        self.runtime.tool_definitions(self.ctx, format=format)  # type: ignore[arg-type]
