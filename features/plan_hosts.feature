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
