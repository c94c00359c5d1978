"""Adapters between toolcycle and agent frameworks, one module per framework.

Each module offers a framework both ways: toolcycle's tools as the framework's own tool
type, run through the runtime so plans, capabilities, validation, approvals and traces
hold, and the framework's tools as toolcycle tools. A module imports its framework when
it is imported, and raises ImportError naming the extra to install when it is missing;
nothing else in toolcycle imports this package.
"""

__all__: list[str] = []
