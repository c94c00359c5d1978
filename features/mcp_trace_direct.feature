Feature: MCP calls carry the caller's trace, and in-process servers run on the SDK's own path
  Every call to an MCP server carries the W3C trace context of the caller's span
  and the host's metadata in its _meta. An in-process server is driven the way
  the SDK's own Client(server) drives it: the direct dispatcher, 2026-07-28.

  @req-mcp-trace-context
  Scenario: A server sees the caller's trace and the host's tenant
    Given an SDK server in process whose tool reports its request, with meta adding tenant "acme"
    When I call its tool "whoami" with OpenTelemetry spans recorded
    Then the server saw the tenant "acme"
    And the server saw the trace id of the call's span

  @req-mcp-direct
  Scenario: An in-process server speaks the 2026-07-28 protocol through the direct dispatcher
    Given an SDK server in process whose tool reports its request
    When I call its tool "era"
    Then the server answered "2026-07-28"

  @req-mcp-direct
  Scenario: The legacy mode keeps the handshake era
    Given an SDK server in process in legacy mode whose tool reports its request
    When I call its tool "era"
    Then the server did not answer "2026-07-28"
