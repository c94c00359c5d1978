Feature: MCP servers as a tool source
  An MCP server registered with register_source lends the runtime its tools.
  Its tools share one connection per plan, opened by the first activation and
  closed when the plan ends; a call can be cancelled or timed out on the
  server; a server that crashes fails the call, not the plan; and no process
  the runtime started outlives the plan that needed it.

  @req-mcp-discover
  Scenario: Registering a server discovers its tools and skips the unusable ones
    Given the MCP test server "local" in process
    When I register the MCP server
    Then the runtime lists the tool "echo"
    And the tool "echo" comes from MCP server "local"
    And the registration warned that it skipped "invalid_schema" and "unknown_dialect"
    And the runtime does not list the tool "invalid_schema"

  @req-mcp-capabilities
  Scenario: Capabilities follow the readOnlyHint annotation and are never checkpointable
    Given the MCP test server "local" in process
    When I register the MCP server
    Then the tool "add" does not write and is not checkpointable
    And the tool "write" writes and is not checkpointable

  @req-mcp-capabilities
  Scenario: A read-only plan refuses the MCP tools that may write
    Given the MCP test server "local" in process
    And I register the MCP server
    And a read-only plan "p1"
    When I call "write" with arguments {"path": "x"}
    Then the call raises ToolAccessDeniedError
    And the MCP server opened 0 connections

  @req-cap-reader-checkpointable
  Scenario: A checkpoint plan runs the MCP tools that do not write
    Given the MCP test server "local" in process
    And I register the MCP server
    And a checkpoint plan "p1"
    When I call "add" with arguments {"a": 2, "b": 3}
    Then the call succeeds
    When I call "write" with arguments {"path": "x"}
    Then the call raises ToolCheckpointRequiredError

  @req-mcp-shared-connection
  Scenario: The tools of a server share one connection per plan, closed at its end
    Given the MCP test server "local" in process
    And I register the MCP server
    And a plan "p1"
    When I call "add" with arguments {"a": 2, "b": 3}
    And I call "echo" with arguments {"text": "hi"}
    Then the call succeeds with output {"text": "hi", "length": 2}
    And the MCP server opened 1 connection
    When plan "p1" ends
    Then every connection the MCP server opened is closed

  @req-mcp-same-loop
  Scenario: A plan activated from a loop keeps its connection there and takes sync calls too
    Given the MCP test server "local" in process
    And I register the MCP server
    When an async caller calls "add" with arguments {"a": 2, "b": 3} from its loop and from sync code
    Then its call from the loop returned {"sum": 5}
    And its call from sync code on another thread returned {"sum": 5}
    And its blocking call on the loop's own thread failed mentioning "wait on itself"
    And every connection the MCP server opened is closed

  @req-mcp-shared-connection
  Scenario: Each plan has its own connection
    Given the MCP test server "local" in process
    And I register the MCP server
    And a plan "p1"
    And a plan "p2"
    When I call "content" in plan "p1"
    And I call "content" in plan "p2"
    Then the MCP server opened 2 connections

  @req-mcp-results
  Scenario: An error reported by the tool gives a failed result with the server's text
    Given the MCP test server "local" in process
    And I register the MCP server
    And a plan "p1"
    When I call "fail"
    Then the call fails with error type "McpToolError"
    And the result's error is "it broke on purpose"

  @req-mcp-cancel
  Scenario: Cancelling the plan during a call cancels the request on the server
    Given the MCP test server "local" in process
    And I register the MCP server
    And a plan "p1"
    When I call the slow MCP tool and cancel the plan once it has started
    Then the call raises ToolCancelledError
    And the server saw the cancellation
    And the last trace has status "cancelled"

  @req-mcp-cancel
  Scenario: A call over its timeout is cancelled on the server and traced as timed out
    Given the MCP test server "local" in process
    And I register the MCP server
    And a plan "p1"
    When I call the slow MCP tool with a timeout of 0.5 seconds
    Then the call fails with error type "TimeoutError"
    And the server saw the cancellation
    And the last trace has status "timed_out"

  @req-mcp-crash
  Scenario: A server that crashes mid-call fails that call, and the next call starts it again
    Given the MCP test server "remote" over stdio
    And I register the MCP server
    And a plan "p1"
    When I call "crash"
    Then the call fails with error type "McpServerError"
    And the result's error mentions "'remote'" and "exit code 3"
    When I call "add" with arguments {"a": 2, "b": 2}
    Then the call succeeds with output {"sum": 4}

  @req-mcp-crash
  Scenario: A server that cannot start fails registration with its exit code and stderr
    Given the MCP test server "broken" over stdio, failing at start
    When I register the MCP server
    Then registering the server failed with McpServerError
    And the error message mentions "exit code 2"
    And the error message mentions "the configuration file is missing"
    And no process the runtime started is left

  @req-mcp-no-leftover
  Scenario: A server started through a shell leaves no process behind when the plan ends
    Given the MCP test server "wrapped" started through a shell
    And I register the MCP server
    And a plan "p1"
    When I call "spawn"
    Then the call succeeds
    And 3 processes the runtime started are running
    When plan "p1" ends
    Then no process the runtime started is left

  @req-mcp-no-leftover
  Scenario: Closing the runtime ends a server shared by every plan
    Given the MCP test server "remote" over stdio, shared by every plan
    And I register the MCP server
    And a plan "p1"
    When I call "add" with arguments {"a": 1, "b": 1}
    And plan "p1" ends
    Then 1 process the runtime started is running
    When the runtime is closed
    Then no process the runtime started is left
