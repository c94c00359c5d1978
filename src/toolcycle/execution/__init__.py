"""How a tool's stages run: on which thread or loop, within which time, and only once.

``_portal`` is the runtime's own event-loop thread, started on first use, where
sync callers run async tools and async sources keep their connections; it also
holds the deadlines every wait counts against. ``_threads`` runs a sync stage
with a time limit on a daemon thread of its own and tells a caller that gave up
how it ended. ``_invoke`` runs one stage (``execute``, an approver) from sync or
async code, sync stages on the runtime's thread pool, under a deadline and a
cancellation token. ``_inflight`` counts each plan's calls in flight, so that
ending a plan can cancel them and wait. ``_lifecycle`` calls a tool's
``activate`` and ``deactivate`` (the latter with a time limit), each observed by
the instrumentation. ``_single_flight`` is the record of one tool's activation in
one plan, which the calls that do not own it wait for, from threads or tasks;
``_activation`` activates a tool at most once per plan (single flight, also
across threads and loops). Nothing here knows about schemas, traces or models.
"""
