"""Steps about cancellation tokens on their own."""

from __future__ import annotations

from typing import Any

from behave import given, then, when

from toolcycle import CancellationToken, ToolCancelledError


def _callback(context: Any, name: str) -> Any:
    def callback() -> None:
        context.ran.append(name)
        if name == "broken":
            raise RuntimeError("a callback bug")

    return callback


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip() != "none"]


@given('a cancellation token with callbacks "{names}"')
def token_with_callbacks(context: Any, names: str) -> None:
    context.token = CancellationToken()
    context.ran = []
    context.cancel_returns = []
    context.unregister = {
        name: context.token.on_cancel(_callback(context, name)) for name in _names(names)
    }


@when('the token is cancelled with reason "{reason}"')
def cancel_token(context: Any, reason: str) -> None:
    context.cancel_returns.append(context.token.cancel(reason))


@when('I register the callback "{name}"')
def register_callback(context: Any, name: str) -> None:
    context.token.on_cancel(_callback(context, name))


@when('the callback "{name}" is unregistered')
def unregister_callback(context: Any, name: str) -> None:
    context.unregister[name]()
    context.unregister[name]()  # a second call is harmless


@then('the callbacks "{names}" ran once each, in that order')
def callbacks_ran(context: Any, names: str) -> None:
    assert context.ran == _names(names), context.ran


@then("the token is cancelled")
def token_cancelled(context: Any) -> None:
    assert context.token.is_cancelled


@then('the cancel calls reported "{flags}"')
def cancel_returns(context: Any, flags: str) -> None:
    expected = [{"true": True, "false": False}[f.strip()] for f in flags.split(",")]
    assert context.cancel_returns == expected, context.cancel_returns


@then('the token reason is "{reason}"')
def token_reason(context: Any, reason: str) -> None:
    assert context.token.reason == reason, context.token.reason


@then("checking the token does nothing")
def check_passes(context: Any) -> None:
    assert not context.token.is_cancelled
    context.token.check()


@then('checking the token raises ToolCancelledError with reason "{reason}"')
def check_raises(context: Any, reason: str) -> None:
    try:
        context.token.check()
    except ToolCancelledError as exc:
        assert exc.reason == reason, exc.reason
    else:
        raise AssertionError("check() did not raise")
