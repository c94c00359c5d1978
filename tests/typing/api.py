"""Type-checked, never run: the public API as users write it, checked with assert_type.

`nox -s typecheck` runs mypy --strict over this file as well as over src/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_type

from toolcycle import (
    CachePolicy,
    CallStream,
    CancellationToken,
    Change,
    ContentPart,
    FunctionTool,
    Guardrail,
    GuardrailCall,
    GuardrailDecision,
    GuardrailRecord,
    GuardrailTripped,
    Image,
    ModelRetry,
    PlanHost,
    ProgressEvent,
    ResultCache,
    RetryAttempt,
    RetryPolicy,
    Text,
    ToolCapability,
    ToolDeactivationError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolFailed,
    ToolInstance,
    ToolResult,
    ToolReturn,
    ToolRuntime,
    ToolSearchMode,
    Validation,
    tool,
)
from toolcycle.guardrails import allow, reject, stop


class Echo:
    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="echo", capability=ToolCapability(writes=False))

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return params

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


class AsyncEcho:
    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="aecho")

    async def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return params

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


def sync_usage() -> None:
    tool: ToolInstance = Echo()
    async_tool: ToolInstance = AsyncEcho()
    with ToolRuntime() as runtime:
        assert_type(runtime.register(tool), ToolDescriptor)
        runtime.register(async_tool)
        with runtime.plan(read_only=True) as ctx:
            assert_type(ctx, ToolExecutionContext)
            result = runtime.execute("echo", {"a": 1}, ctx, timeout=1.0)
            assert_type(result, ToolResult)
            assert_type(result.trace, ToolExecutionTrace | None)
            assert_type(result.validation, Validation | None)
            assert_type(result.changes, tuple[Change, ...])
            assert_type(result.content, tuple[ContentPart, ...])
            assert_type(result.metadata, dict[str, Any] | None)
            assert_type(result.to_messages("anthropic"), list[dict[str, Any]])
            token = ctx.cancellation_token
            assert_type(token, CancellationToken)
            assert_type(token.on_cancel(lambda: None), Callable[[], None])
        errors = runtime.end_plan(ctx)
        assert_type(errors, list[ToolDeactivationError])


def retries_usage() -> None:
    policy = RetryPolicy(attempts=3, backoff=0.1, retry_on=(ConnectionError,))
    assert_type(policy.retry_on, tuple[type[Exception], ...])

    @tool(writes=False, idempotent=True, max_retries=2, retry=policy)
    def fetch(url: str) -> str:
        """Fetch a page."""
        if not url:
            raise ModelRetry("give a URL")
        raise ToolFailed("offline")

    assert_type(fetch, FunctionTool)

    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    # The function and the options in one call, as `@tool(...)` on it.
    assert_type(tool(lookup, name="find_city", writes=False), FunctionTool)
    assert_type(tool(lookup), FunctionTool)
    assert_type(fetch.max_retries, int | None)
    assert_type(fetch.retry_policy, RetryPolicy | None)
    with ToolRuntime(max_retries=1, retry=policy) as runtime:
        runtime.register(Echo(), max_retries=0, retry=None)
        with runtime.plan() as ctx:
            result = runtime.execute("echo", {}, ctx)
            assert_type(result.retryable, bool)
            assert_type(result.retries_left, int | None)
            assert result.trace is not None
            assert_type(result.trace.retry, int)
            assert_type(result.trace.attempts, tuple[RetryAttempt, ...])
            assert_type(ModelRetry("x").message, str)


def result_cache_usage() -> None:
    @tool(writes=False, cache=CachePolicy(ttl=60, key=lambda data: data["city"]))
    def weather(city: str) -> str:
        """Look the weather up."""
        return city

    store = ResultCache(max_entries=100, max_bytes=1_000_000)
    with ToolRuntime(result_cache=store) as runtime:
        runtime.register(weather, cache=CachePolicy(ttl=5, scope="runtime"))
        assert_type(runtime.result_cache, ResultCache)
        with runtime.plan() as ctx:
            trace = runtime.execute("weather", {"city": "Oslo"}, ctx).trace
            assert trace is not None
            assert_type(trace.cache_hit, bool)
    assert_type(len(store), int)
    assert_type(store.bytes_used, int)


def guardrails_usage() -> None:
    def no_root(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        assert_type(call.arguments["path"], Any)
        return reject("not the root") if call.arguments["path"] == "/" else allow()

    async def no_secrets(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return stop("a secret") if "secret" in str(call.output) else allow()

    guards: list[Guardrail] = [no_root, no_secrets]

    @tool(writes=False, input_guardrails=[no_root], output_guardrails=[no_secrets])
    def read(path: str) -> str:
        """Read a file."""
        return path

    with ToolRuntime(input_guardrails=guards, guardrails_after_approval=True) as runtime:
        runtime.register(read, output_guardrails=[no_secrets])
        with runtime.plan() as ctx:
            try:
                result = runtime.execute("read", {"path": "/"}, ctx)
            except GuardrailTripped as error:
                assert_type(error.guardrail, str)
            else:
                assert result.trace is not None
                assert_type(result.trace.guardrails, tuple[GuardrailRecord, ...])


def tool_search_usage() -> None:
    @tool(writes=False, defer_loading=True)
    def find_invoice(number: str) -> str:
        """Find an invoice by its number."""
        return number

    mode: ToolSearchMode = "local"
    with ToolRuntime() as runtime:
        assert_type(runtime.register(find_invoice, defer_loading=True), ToolDescriptor)
        assert_type(runtime.descriptor("find_invoice").defer_loading, bool)
        with runtime.plan() as ctx:
            definitions = runtime.tool_definitions(ctx, format="anthropic", search="bm25")
            assert_type(definitions, list[dict[str, Any]])
            runtime.tool_definitions(ctx, search=mode)
            ctx.reveal_tools(["find_invoice"])
            assert_type(ctx.revealed_tools, frozenset[str])
            found = runtime.call({"name": "search_tools", "arguments": {"query": "invoice"}}, ctx)
            assert found.trace is not None
            assert_type(found.trace.revealed_tools, tuple[str, ...])


def plan_host_usage() -> None:
    from toolcycle.hosts import ProcessHost, ToolImport

    host = ProcessHost(name="local", tools={"echo": ToolImport("pkg.tools:Echo")})
    as_protocol: PlanHost = host
    with ToolRuntime() as runtime:
        runtime.register(Echo())
        with runtime.plan(host=host) as ctx:
            result = runtime.execute("echo", {}, ctx)
            assert_type(host.worker_pid(ctx), int | None)
            assert_type(as_protocol.placement(ctx), str | None)
        assert result.trace is not None
        assert_type(result.trace.host, str | None)
        assert_type(result.trace.host_id, str | None)


def ray_host_usage() -> None:
    from toolcycle.hosts import RayHost, ToolImport

    host = RayHost(
        name="cluster",
        tools={"echo": ToolImport("pkg.tools:Echo")},
        actor_options={"num_cpus": 0.5},
    )
    as_protocol: PlanHost = host
    with ToolRuntime() as runtime, runtime.plan(host=host) as ctx:
        assert_type(as_protocol.placement(ctx), str | None)
        assert_type(host.placement(ctx), str | None)
        host.close()


def rich_returns() -> None:
    returned = ToolReturn(value={"rows": 3}, content=[Text("a chart"), Image(b"...", "image/png")])
    assert_type(returned, ToolReturn[dict[str, int]])
    assert_type(returned.content, tuple[ContentPart, ...])
    assert_type(Image.from_base64("AAE=", "image/png"), Image)
    assert_type(ToolReturn(content=Text("only text")).metadata, dict[str, Any])


async def async_usage() -> None:
    with ToolRuntime() as runtime:
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("aecho", {}, ctx)
            assert_type(result, ToolResult)
            await runtime.aactivate("aecho", ctx)
            stream = runtime.astream("aecho", {}, ctx, idle_timeout=5.0, max_buffered=10)
            assert_type(stream, CallStream)
            async for item in stream:
                assert_type(item, ProgressEvent | ToolResult)
            assert_type(stream.dropped, int)
            async with runtime.astream_call({"name": "aecho", "arguments": {}}, ctx) as answer:
                async for item in answer:
                    assert_type(item, ProgressEvent | ToolResult)
        assert_type(await runtime.aend_plan(ctx), list[ToolDeactivationError])
    async with ToolRuntime() as closing:
        assert_type(closing, ToolRuntime)
        assert_type(await closing.aclose(), None)


def langchain_adapter_usage() -> None:
    from langchain_core.tools import BaseTool, StructuredTool

    from toolcycle.adapters.langchain import from_langchain, langchain_tools

    with ToolRuntime() as runtime, runtime.plan() as ctx:
        assert_type(langchain_tools(runtime, ctx), list[BaseTool])
    native = StructuredTool.from_function(lambda text: text, name="echo", description="Echo.")
    assert_type(from_langchain(native, writes=False, tags=["x"]), ToolInstance)


def openai_agents_adapter_usage() -> None:
    from agents import Agent, FunctionTool, Runner, Tool, function_tool

    from toolcycle.adapters.openai_agents import (
        SdkFunctionTool,
        from_function_tool,
        function_tools,
    )

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert_type(add, FunctionTool)
    wrapped = from_function_tool(add, writes=False, checkpointable=True, requires_approval=False)
    assert_type(wrapped, SdkFunctionTool)
    as_tool: ToolInstance = wrapped
    with ToolRuntime() as runtime:
        assert_type(runtime.register(as_tool), ToolDescriptor)
        with runtime.plan() as ctx:
            assert_type(function_tools(runtime, ctx), list[Tool])
            assert_type(function_tools(runtime, ctx, approval="writes"), list[Tool])
            by_rule = function_tools(runtime, ctx, approval=lambda d: d.capability.writes)
            agent = Agent(name="typed", tools=function_tools(runtime, ctx) + by_rule)
            assert_type(Runner.run_sync(agent, "go").final_output, Any)


async def openai_agents_approval_usage() -> None:
    from agents import Agent, Runner, ToolApprovalItem

    from toolcycle.adapters.openai_agents import function_tools, reject

    with ToolRuntime() as runtime:
        async with runtime.aplan() as ctx:
            agent = Agent(name="mail", tools=function_tools(runtime, ctx, approval="writes"))
            first = await Runner.run(agent, "go")
            state = first.to_state()
            for item in first.interruptions:
                assert_type(item, ToolApprovalItem)
                assert_type(await reject(runtime, ctx, state, item, "not now"), ToolResult)


async def mcp_credentials_usage() -> None:
    from toolcycle.sources.mcp import (
        FileTokenStorage,
        HttpCredentials,
        McpAuthError,
        McpServer,
        MemoryTokenStorage,
        TokenStorage,
    )

    def per_user(ctx: ToolExecutionContext) -> HttpCredentials:
        return HttpCredentials(headers={"Authorization": f"Bearer {ctx.metadata['token']}"})

    async def per_user_async(ctx: ToolExecutionContext) -> dict[str, str]:
        return {"Authorization": "Bearer x"}

    assert_type(McpServer.http("http://127.0.0.1/mcp", credentials=per_user), McpServer)
    assert_type(McpServer.http("http://127.0.0.1/mcp", credentials=per_user_async), McpServer)
    stores: list[TokenStorage] = [MemoryTokenStorage(), FileTokenStorage("tokens.json")]
    assert_type(await stores[0].get_tokens() is None, bool)
    assert_type(McpAuthError("refused", server="s").status, int)


def mcp_requests_usage() -> None:
    from toolcycle import Resumption, current_resumption
    from toolcycle.sources.mcp import (
        ElicitAnswer,
        Elicitation,
        McpRequests,
        McpServer,
        RequestContext,
        Root,
        SamplingAnswer,
        SamplingRequest,
    )

    def ask(question: Elicitation, call: RequestContext) -> ElicitAnswer:
        return ElicitAnswer.defer() if question.mode == "url" else ElicitAnswer.accept({})

    async def sample(request: SamplingRequest, call: RequestContext) -> SamplingAnswer:
        return SamplingAnswer(text=str(request.max_tokens), model="m")

    shared = McpRequests(on_elicit=ask, on_sample=sample, roots=[Root("file:///tmp")])
    server = McpServer.stdio("server", protocol="auto", requests=shared)
    assert_type(server, McpServer)
    assert_type(current_resumption(), Resumption | None)
    with ToolRuntime() as runtime, runtime.plan() as ctx:
        result = runtime.execute("greet", {}, ctx)
        if result.pending is not None:
            assert_type(result.pending.request, dict[str, Any] | None)
            runtime.resume(result.pending, ElicitAnswer.cancel().decision(), ctx)
        assert_type(ctx.call_id, str | None)


def durable_plan_usage() -> None:
    from dbos import DBOS

    from toolcycle import ConcurrentCallError, PlanResumeError, ToolInterruptedError
    from toolcycle.durable import DurablePlan
    from toolcycle.hosts import DBOSPlan

    engine: DurablePlan = DBOSPlan(prefix="orders")

    @DBOS.workflow()
    def order() -> str:
        with ToolRuntime() as runtime, runtime.plan(durable=engine) as ctx:
            assert_type(ctx.durable, DurablePlan | None)
            result = runtime.execute("echo", {}, ctx)
            assert_type(result.error_type, str | None)
            return ctx.plan_id

    assert_type(order(), str)
    assert_type(ToolInterruptedError("x").tool_name, str | None)
    assert_type(DBOSPlan.resume("order-1").get_result(), Any)
    assert_type(ConcurrentCallError("x").plan_id, str | None)
    assert_type(PlanResumeError("x").plan_id, str | None)


async def durable_plan_resume_async() -> None:
    from toolcycle.hosts import DBOSPlan

    handle = await DBOSPlan.aresume("order-1")
    assert_type(await handle.get_result(), Any)
