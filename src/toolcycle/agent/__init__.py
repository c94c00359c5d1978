"""The agent loop's pieces: what a model is shown, and how its tool calls are read.

``_names`` maps tool names to what each provider accepts, reversibly;
``_schemas`` rewrites input schemas for OpenAI's strict mode and drops the nulls
strict mode sends for optional fields; ``_definitions`` builds a tool's
definition in each provider's format; ``_calls`` reads a tool call in any of
those formats; ``_dispatch`` resolves the name a model used and words the
refusals it gets back; ``_batch`` runs a batch of calls concurrently, keeping
sequential tools in order; ``_messages`` builds the provider's tool-result
message; ``_approve`` builds approval requests, pending records and decisions;
``_search`` ranks deferred tools for a search and ``_deferred`` builds the
definitions when some tools wait for one.
The runtime's dispatcher and approvals part put them to work.
"""
