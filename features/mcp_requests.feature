Feature: Requests from an MCP server during a call
  A server may ask its client a question for a person, a completion from the
  host's model, its roots, and it sends log messages. The host answers with
  handlers in toolcycle's own types, whichever protocol era the server speaks;
  a question nobody can answer now makes the call wait, and resuming it with
  the person's answer continues the same call.

  @req-mcp-elicit
  Scenario Outline: The host's handler answers a server's question in the <protocol> era
    Given the asking MCP server in process with protocol "<protocol>" and a handler that answers "Ann", 37
    When I call the MCP tool "greet"
    Then the MCP call returned "hello Ann, 37"

    Examples:
      | protocol |
      | legacy   |
      | auto     |

  @req-mcp-elicit-defer
  Scenario: A question nobody answers defers the call, and the answer resumes it
    Given the asking MCP server in process with protocol "auto" and no handlers
    When I call the MCP tool "greet"
    Then the MCP call is pending with the question "Who is asking?"
    When I resume it with the answer "Ann", "not a number"
    Then the MCP call is pending with an error mentioning "/age"
    When I resume it with the answer "Ann", 37
    Then the MCP call returned "hello Ann, 37"

  @req-mcp-sampling-declined
  Scenario: A sampling request with no handler fails the call at once
    Given the asking MCP server in process with protocol "auto" and no handlers
    When I call the MCP tool "summarise"
    Then the MCP call failed mentioning "sampling"

  @req-mcp-server-logs
  Scenario: A server's log messages go to the standard logging module
    Given the asking MCP server in process with protocol "legacy" and no handlers
    When I call the MCP tool "chatty" while capturing logs
    Then the logger "toolcycle.mcp.asking" received "starting the chatty tool"
