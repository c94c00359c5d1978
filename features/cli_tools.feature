Feature: The command line lists, describes and calls the tools of sources
  A user checks an MCP server or a skills folder from the shell before wiring
  it into an agent: the tools as a table, one tool's schemas, one call with its
  trace, and exit codes that say what went wrong.

  @req-cli-tools
  Scenario: Listing the tools of the skills corpus
    When I run toolcycle with "tools --skills tests/data/agent-skills"
    Then it exits with 0
    And its output lists the tool "mcp-builder" from "skill:mcp-builder"
    And its errors warn about the skill "claude-api"

  @req-cli-call
  Scenario: Calling a tool of the test MCP server
    When I run toolcycle with "call add --args '{"a": 2, "b": 3}' --mcp" and the test MCP server
    Then it exits with 0
    And its output is a result whose output is {"sum": 5} and whose trace status is "ok"

  @req-cli-call
  Scenario: A call to an unknown tool is a usage error
    When I run toolcycle with "call nope --skills tests/data/agent-skills"
    Then it exits with 2
    And its errors say "no tool named 'nope'"

  @req-cli-call
  Scenario: A write tool on a workspace given without --writable fails and says why
    When I run toolcycle with "call write_file --args '{"path": "x.txt", "content": "x"}' --workspace tests/data"
    Then it exits with 1
    And its errors say "read-only unless --writable is given"

  @req-cli-tools
  Scenario: An MCP program that is not on PATH is a source error
    When I run toolcycle with "tools --mcp no-such-mcp-server"
    Then it exits with 3
    And its errors say "program 'no-such-mcp-server' was not found on PATH"
