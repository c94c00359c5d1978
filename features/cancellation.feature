Feature: Cancellation
  A plan's cancellation token is a one-way switch shared by every call of the
  plan. A cancelled plan runs and activates nothing; a call that is running
  when the plan is cancelled stops with ToolCancelledError, which always
  propagates and is never turned into a failed result.

  @req-cancel-before-call
  Scenario: A call in a plan cancelled beforehand raises and activates nothing
    Given a plan "p1"
    And a tool "echo" that reads
    And plan "p1" is cancelled with reason "operator"
    When I call "echo"
    Then the call raises ToolCancelledError
    And the error carries the reason "operator"
    And the error names tool "echo" and plan "p1"
    And "echo" was never activated
    And the last trace has status "cancelled"

  @req-cancel-before-call
  Scenario: An awaited call in a plan cancelled beforehand raises and activates nothing
    Given a plan "p1"
    And an async tool "fetch" that runs until cancelled
    And plan "p1" is cancelled with reason "operator"
    When I await "fetch"
    Then the call raises ToolCancelledError
    And "fetch" was never activated
    And the last trace has status "cancelled"

  @req-cancel-async-midrun
  Scenario: Cancelling the plan while aexecute awaits an async tool cancels the tool
    Given a plan "p1"
    And an async tool "fetch" that runs until cancelled
    When I await "fetch" and cancel the plan while it runs
    Then the call raises ToolCancelledError
    And the error carries the reason "stop"
    And "fetch" saw its cancellation
    And the last trace has status "cancelled"

  @req-cancel-async-midrun
  Scenario: Cancelling the plan while execute runs an async tool from sync code cancels the tool
    Given a plan "p1"
    And an async tool "fetch" that runs until cancelled
    When I call "fetch" and cancel the plan while it runs
    Then the call raises ToolCancelledError
    And "fetch" saw its cancellation
    And the last trace has status "cancelled"

  @req-cancel-check
  Scenario: A sync tool that checks the token mid-run stops with ToolCancelledError
    Given a plan "p1"
    And a tool "loop" that checks the token until it is cancelled
    When I call "loop" and cancel the plan while it runs
    Then the call raises ToolCancelledError
    And the error carries the reason "stop"
    And the last trace has status "cancelled"
    And no result was returned

  @req-cancel-check
  Scenario: Checking a cancelled token raises with the reason, checking an active one does not
    Given a cancellation token with callbacks "none"
    Then checking the token does nothing
    When the token is cancelled with reason "shutdown"
    Then checking the token raises ToolCancelledError with reason "shutdown"

  @req-cancel-callbacks
  Scenario: Callbacks registered on the token run once when it is cancelled
    Given a cancellation token with callbacks "first, second"
    When the token is cancelled with reason "stop"
    Then the callbacks "first, second" ran once each, in that order

  @req-cancel-callbacks
  Scenario: A callback registered after cancellation runs at once
    Given a cancellation token with callbacks "none"
    When the token is cancelled with reason "stop"
    And I register the callback "late"
    Then the callbacks "late" ran once each, in that order

  @req-cancel-callbacks
  Scenario: A callback that raises does not stop the others
    Given a cancellation token with callbacks "first, broken, last"
    When the token is cancelled with reason "stop"
    Then the callbacks "first, broken, last" ran once each, in that order
    And the token is cancelled

  @req-cancel-callbacks
  Scenario: An unregistered callback does not run
    Given a cancellation token with callbacks "kept, dropped"
    When the callback "dropped" is unregistered
    And the token is cancelled with reason "stop"
    Then the callbacks "kept" ran once each, in that order

  @req-cancel-idempotent
  Scenario: Cancelling twice changes nothing the second time
    Given a cancellation token with callbacks "only"
    When the token is cancelled with reason "first"
    And the token is cancelled with reason "second"
    Then the cancel calls reported "true, false"
    And the token reason is "first"
    And the callbacks "only" ran once each, in that order

  @req-cancel-idempotent
  Scenario: A plan cancelled twice keeps the first reason
    Given a plan "p1"
    And a tool "echo" that reads
    And plan "p1" is cancelled with reason "first"
    And plan "p1" is cancelled with reason "second"
    When I call "echo"
    Then the call raises ToolCancelledError
    And the error carries the reason "first"

  @req-cancel-deactivates
  Scenario: A cancelled plan still deactivates what it activated when it ends
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    And plan "p1" is cancelled with reason "stop"
    And I call "echo"
    And plan "p1" ends
    Then the call raises ToolCancelledError
    And "echo" was deactivated 1 time in plan "p1"
    And the trace statuses are "ok, cancelled"
