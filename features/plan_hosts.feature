Feature: Plan hosts: a plan's tools run in a worker process of their own
  A plan opened with host=ProcessHost() runs its tools' activate, execute and
  deactivate in one worker process that the plan owns. Validation, approvals,
  traces and everything else stay in the caller's runtime.

  @req-host-lifecycle
  Scenario: A plan's tool stages run in its worker, in lifecycle order
    Given the journal tools "first" and "second" in a process host named "local"
    When a plan with the host runs "first", "first" and "second"
    Then the stages ran in one other process in this order:
      | stage      | tool   |
      | activate   | first  |
      | execute    | first  |
      | execute    | first  |
      | activate   | second |
      | execute    | second |
      | deactivate | second |
      | deactivate | first  |
    And every trace names the host "local" and the worker that ran the call

  @req-host-cancel
  Scenario: Cancelling the plan stops the tool's body in the worker
    Given the journal tools "first" and "second" in a process host named "local"
    When a plan with the host cancels its token while a call waits for it
    Then the call raised ToolCancelledError
    And the body in the worker saw its token cancelled

  @req-host-worker-death
  Scenario: A killed worker fails its call, and the plan goes on in a fresh one
    Given the journal tools "first" and "second" in a process host named "local"
    When a plan with the host kills its worker while a call runs, then runs "first"
    Then the call that was running failed naming the host "local"
    And "first" ran in a second worker, activated there again

  @req-host-lifecycle
  Scenario: On Ray, a plan's tool stages run in its actor, and traces name its node
    Given the journal tools "first" and "second" in a Ray host named "cluster"
    When a plan with the host runs "first", "first" and "second"
    Then the stages ran in one other process in this order:
      | stage      | tool   |
      | activate   | first  |
      | execute    | first  |
      | execute    | first  |
      | activate   | second |
      | execute    | second |
      | deactivate | second |
      | deactivate | first  |
    And every trace names the host "cluster" and the Ray node of its actor

  @req-host-progress
  Scenario: On Ray, progress reported in the actor keeps a call alive past its idle limit
    Given the journal tools "first" and "second" in a Ray host named "cluster"
    When a plan with the host runs a tool that reports every 0.3 s for 1.8 s, with an idle limit of 1 s
    Then the call succeeded and its trace counts 6 progress reports

  @req-host-pool
  Scenario: A Ray pool of two actors hosts three plans, each with its own lifecycle
    Given the journal tools "first" and "second" in a Ray host pool of 2 named "pooled"
    When three plans with the host each run "first", "first" and "second"
    Then each plan's stages ran in this order:
      | stage      | tool   |
      | activate   | first  |
      | execute    | first  |
      | execute    | first  |
      | activate   | second |
      | execute    | second |
      | deactivate | second |
      | deactivate | first  |
    And the three plans ran in two actor processes

  @req-host-sources
  Scenario: An MCP server and a skill's script run in the plan's worker
    Given an MCP stdio server and a skill with a script in a process host named "local"
    When a plan with the host calls the server's tool and runs the skill's script
    Then both ran in the plan's worker, and the server's process ended with the plan
