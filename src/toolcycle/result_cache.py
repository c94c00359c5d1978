"""Result caching: a tool's successful results kept for a while and answered again.

A tool opts in with a `CachePolicy` (``@tool(writes=False, cache=CachePolicy(60))``
or ``runtime.register(t, cache=...)``); only a tool that does not write may. The
runtime keeps the results of all its cached tools in one `ResultCache`, bounded
both in entries and in bytes, and drops the least recently used entry first
when either bound is reached.

A cached result is found again by its key: the tool's registration, the scope
(the plan itself, its context, for ``scope="plan"``; nothing for
``scope="runtime"``) and the canonical JSON of the validated input (keys sorted,
no whitespace), or of what the policy's ``key`` function makes of that input.
Entries of scope ``"plan"`` are dropped when their plan ends, and a plan that has
ended keeps none: the check and the put happen under the lock that the drop takes.

The store is `cachetools.TLRUCache` (an entry's time to live is its tool's),
made on the first result kept, so a runtime without cached tools never loads it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolcycle._bounds import LONGEST_SECONDS, shown_value
from toolcycle._value import FrozenValue, frozen_value

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from toolcycle._types import Clock

__all__ = ["CachePolicy", "ResultCache"]

_DEFAULT_ENTRIES = 1024
_DEFAULT_BYTES = 16 * 1024 * 1024
_set = object.__setattr__  # how a frozen value's __init__ sets its fields


class _Plan(Protocol):
    """A plan as the store sees it: hashed and compared by identity, and ended once."""

    @property
    def ended(self) -> bool:
        """Whether the plan has ended; it must be true before its entries are dropped."""
        ...


@frozen_value
class CachePolicy(FrozenValue):
    """How long a tool's results are kept, under which key, and for whom.

    Args:
        ttl: seconds a result stays fresh after the call that produced it.
        key: makes the input part of the key from the validated input (a dict
            of JSON data); whatever it returns must be JSON data. None: the
            whole input. A key function that raises, or returns something that
            is not JSON, makes that call skip the cache (logged as a warning).
        scope: ``"plan"`` (the default) shares results only within one plan and
            drops them when the plan ends; ``"runtime"`` shares them across the
            runtime's plans until they expire.

    Raises:
        ValueError: ``ttl`` is not a positive, finite number of seconds, or
            ``scope`` is neither ``"plan"`` nor ``"runtime"``.
        TypeError: ``key`` is given but not callable.
    """

    ttl: float
    key: Callable[[dict[str, Any]], Any] | None = None
    scope: Literal["plan", "runtime"] = "plan"

    def __init__(
        self,
        ttl: float,
        key: Callable[[dict[str, Any]], Any] | None = None,
        scope: Literal["plan", "runtime"] = "plan",
    ) -> None:
        _set(self, "ttl", ttl)
        _set(self, "key", key)
        _set(self, "scope", scope)
        self.__post_init__()

    def __post_init__(self) -> None:
        ttl = self.ttl
        # An int past the largest float is finite but overflows the store's expiry sum.
        if (
            isinstance(ttl, bool)
            or not isinstance(ttl, int | float)
            or not 0 < ttl <= LONGEST_SECONDS
        ):
            raise ValueError(
                f"ttl must be positive, finite seconds, got {shown_value(ttl)}; "
                "for example CachePolicy(ttl=60) keeps results for a minute"
            )
        if self.scope not in ("plan", "runtime"):
            raise ValueError(f"scope must be 'plan' or 'runtime', got {self.scope!r}")
        if self.key is not None and not callable(self.key):
            raise TypeError(f"key must be a function of the input or None, got {self.key!r}")


class ResultCache:
    """The bounded store of a runtime's cached results; thread-safe.

    Pass one to ``ToolRuntime(result_cache=...)`` to choose the bounds; a
    runtime makes a default one otherwise. One store may serve several runtimes:
    their keys never collide, and the bounds then cover all of them.

    Args:
        max_entries: the most results kept at once (1024 by default).
        max_bytes: the most bytes kept at once, counted as the UTF-8 size of
            each result's JSON text plus its key (16 MiB by default). A single
            result larger than this is not kept.
        timer: monotonic seconds, for expiry (injectable for tests).

    Raises:
        ValueError: a bound is not a positive whole number.
    """

    def __init__(
        self,
        *,
        max_entries: int = _DEFAULT_ENTRIES,
        max_bytes: int = _DEFAULT_BYTES,
        timer: Clock = time.monotonic,
    ) -> None:
        for name, value in (("max_entries", max_entries), ("max_bytes", max_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"{name} must be a positive whole number, got {shown_value(value)}"
                )
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._timer = timer
        self._lock = threading.Lock()
        self._store: Any = None  # a cachetools.TLRUCache once the first result is kept
        self._plans: set[_Plan] = set()  # plans that may still have entries
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        """How many results are kept (expired ones count until they are swept)."""
        with self._lock:
            return 0 if self._store is None else len(self._store)

    @property
    def bytes_used(self) -> int:
        """How many bytes the kept results take, as counted against ``max_bytes``."""
        with self._lock:
            return 0 if self._store is None else int(self._store.currsize)

    def clear(self) -> None:
        """Forget every kept result."""
        with self._lock:
            if self._store is not None:
                self._store.clear()
            self._plans.clear()

    def get(self, key: Hashable) -> Any:
        """The value kept under ``key`` if it is still fresh, else None (the runtime's use)."""
        with self._lock:
            store = self._store
            found = None if store is None else store.get(key)
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            return found[0]

    def put(self, key: Hashable, value: Any, size: int, ttl: float, plan: _Plan | None) -> bool:
        """Keep ``value`` under ``key`` for ``ttl`` seconds (the runtime's use).

        ``plan`` is the plan (its context) whose end drops the entry; None: no plan's.
        Returns whether it was kept: a value larger than ``max_bytes`` is not, and
        neither is one for a plan that has ended.
        """
        if size > self.max_bytes:
            return False
        with self._lock:
            # Checked under the lock drop_plan takes, and a plan is marked ended before
            # it is dropped: either this entry is in place for the drop, or it is refused.
            if plan is not None and plan.ended:
                return False
            store = self._store
            if store is None:
                store = self._store = _new_store(self.max_bytes, self._timer)
            if key not in store:
                while len(store) >= self.max_entries:
                    store.popitem()  # least recently used first
            store[key] = (value, ttl, size)
            if plan is not None:
                self._plans.add(plan)
        return True

    def drop_plan(self, plan: _Plan) -> int:
        """Forget the entries of ``plan``, which has ended; how many there were (the runtime's use).

        Plan entries' second key part is ``("plan", plan)`` (see `runtime._caching`). It is
        the plan's context, not its id: another plan of the same id (a later one, or
        one of another runtime sharing this store) keeps its entries.
        """
        with self._lock:
            if plan not in self._plans:
                return 0
            store = self._store
            scope = ("plan", plan)
            doomed = [key for key in store if key[1] == scope]
            for key in doomed:
                # An entry that expired since the list was made is removed all the same,
                # but cachetools then raises KeyError: the rest must still go.
                with contextlib.suppress(KeyError):
                    del store[key]
            self._plans.discard(plan)
            return len(doomed)


def _new_store(max_bytes: int, timer: Clock) -> Any:
    # Imported here, not at the top: `import toolcycle` then never pays for it, and a
    # runtime that caches nothing never loads it.
    from cachetools import TLRUCache

    return TLRUCache(maxsize=max_bytes, ttu=_expires, timer=timer, getsizeof=_size)


def _expires(key: Any, value: tuple[Any, float, int], now: float) -> float:
    return now + value[1]


def _size(value: tuple[Any, float, int]) -> int:
    return value[2]
