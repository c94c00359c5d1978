"""How a tool's stages run: on which thread or loop, within which time, and only once.

``_portal`` is the runtime's own event-loop thread, started on first use, where
sync callers run async tools and async sources keep their connections.
``_invoke`` runs one stage (``execute``, an approver) from sync or async code,
sync stages on the runtime's thread pool, under a deadline and a cancellation
token, and gives up on a stage that outlives its limit. ``_inflight`` counts each
plan's calls in flight, so that ending a plan can cancel them and wait.
``_activation`` activates a tool at most once per plan (single flight, also
across threads and loops) and deactivates it at the plan's end with a time
limit. Nothing here knows about schemas, traces or models.
"""
