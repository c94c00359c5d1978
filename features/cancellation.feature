Feature: Cancellation
  A plan's cancellation token stops its calls; cancellation always propagates.

  @req-cancel-before
  Scenario: A cancelled plan activates nothing
    Given a tool "reader" that reads
    And a plan "p"
    And plan "p" is cancelled with reason "stop"
    When I call "reader"
    Then the call raises ToolCancelledError
    And the error is not a ToolRuntimeError
    And "reader" was never activated
    And the last trace has status "cancelled"

  @req-cancel-async
  Scenario: Cancelling the plan cancels an awaited async tool
    Given an async tool "waiter" that runs until cancelled
    And a plan "p"
    When I await "waiter" and cancel the plan while it runs
    Then the call raises ToolCancelledError
    And "waiter" was cancelled
    And the last trace has status "cancelled"

  @req-cancel-timeout
  Scenario: A call over its timeout is reported as timed out
    Given an async tool "waiter" that runs until cancelled
    And a plan "p"
    When I call "waiter" with a timeout of 0.05 seconds
    Then the call fails with error type "TimeoutError"
    And "waiter" was cancelled
    And the last trace has status "timed_out"
