Feature: Per-plan activation cache
  Each tool is activated at most once per plan, however many calls the plan
  makes and from however many threads. A failed activation is not remembered:
  the next call tries again, once an activate abandoned at its time limit has returned.

  @req-cache-once
  Scenario: Many calls in one plan activate the tool once
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo" 3 times
    Then every call succeeded
    And "echo" was activated 1 time in plan "p1"
    And "echo" ran 3 times in plan "p1"

  @req-cache-once
  Scenario: Each plan activates the tool once for itself
    Given a plan "p1"
    And a plan "p2"
    And a tool "echo" that reads
    When I call "echo" in plan "p1"
    And I call "echo" in plan "p2"
    And I call "echo" in plan "p1"
    Then "echo" was activated 1 time in plan "p1"
    And "echo" was activated 1 time in plan "p2"
    And "echo" is active in plan "p1"

  @req-cache-one-plan-per-id
  Scenario: A plan id names one open plan at a time
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo" in plan "p1"
    And I start another plan "p1"
    Then starting it was refused with ToolRuntimeError mentioning "already open"
    And "echo" is active in plan "p1"
    When plan "p1" ends
    And I start another plan "p1"
    Then starting it succeeded

  @req-cache-once
  Scenario: An explicit activation ahead of the first call is reused by the calls
    Given a plan "p1"
    And a tool "echo" that reads
    When I activate "echo" ahead of its first call
    And I call "echo" 2 times
    Then "echo" was activated 1 time in plan "p1"
    And 2 traces were delivered

  @req-cache-single-flight
  Scenario: Concurrent first calls from threads share one activation
    Given a runtime that signals when calls enter it
    And a plan "p1"
    And a tool "slow-start" whose activation waits for a gate
    When 4 threads make the first call of "slow-start" at the same time
    Then every call succeeded
    And 4 traces were delivered
    And "slow-start" was activated 1 time in plan "p1"
    And "slow-start" ran 4 times in plan "p1"

  @req-cache-single-flight
  Scenario: Threads waiting on a failing activation all see the failure, and none is cached
    Given a runtime that signals when calls enter it
    And a plan "p1"
    And a tool "slow-start" whose activation waits for a gate and then fails
    When 3 threads make the first call of "slow-start" at the same time
    Then every call raised ToolActivationError
    And "slow-start" was activated 1 time in plan "p1"
    And "slow-start" is not active in plan "p1"

  @req-cache-failed-retry
  Scenario: A failed activation is not cached and the next call retries it
    Given a plan "p1"
    And a tool "db" whose activation fails with ConnectionError
    When I call "db"
    Then the call raises ToolActivationError
    And "db" is not active in plan "p1"
    When the activation of "db" is repaired
    And I call "db"
    Then the call succeeds
    And "db" was activated 2 times in plan "p1"
    And "db" is active in plan "p1"

  @req-cache-failed-retry
  Scenario: Only the activation that succeeded is deactivated
    Given a plan "p1"
    And a tool "db" whose activation fails with ConnectionError
    When I call "db"
    And the activation of "db" is repaired
    And I call "db"
    And plan "p1" ends
    Then "db" was activated 2 times in plan "p1"
    And "db" was deactivated 1 time in plan "p1"

  @req-cache-late-activation
  Scenario: A sync activation past its limit blocks retries until it returns, then is undone
    Given a runtime whose activate timeout is 0.1 seconds
    And a plan "p1"
    And a tool "slow-start" whose activation waits for a gate
    When I call "slow-start"
    Then the call raises ToolActivationError
    And the error message mentions "activate_timeout"
    When I call "slow-start"
    Then the call raises ToolActivationError
    And the error message mentions "still running"
    When the gate of "slow-start" opens and its late activation has ended
    Then "slow-start" was activated 1 time in plan "p1"
    And "slow-start" was deactivated 1 time in plan "p1"
    When I call "slow-start"
    Then the call succeeds
    And "slow-start" was activated 2 times in plan "p1"
