Feature: The per-plan activation cache
  Each tool is activated at most once per plan and deactivated exactly once
  when the plan ends.

  @req-cache-once
  Scenario: Many calls in one plan activate once
    Given a tool "reader" that reads
    And a plan "p"
    When I call "reader" 3 times
    Then every call succeeds
    And "reader" was activated 1 time in plan "p"

  @req-cache-per-plan
  Scenario: Each plan activates its own tools
    Given a tool "reader" that reads
    And a plan "a"
    And a plan "b"
    When I call "reader" in plan "a"
    And I call "reader" in plan "b"
    Then "reader" was activated 1 time in plan "a"
    And "reader" was activated 1 time in plan "b"

  @req-cache-single-flight
  Scenario: Concurrent first calls share one activation
    Given a tool "slow" whose activation waits until released
    And a plan "p"
    When 4 threads call "slow" at the same time
    Then every call succeeds
    And "slow" was activated 1 time in plan "p"

  @req-cache-failed-not-cached
  Scenario: A failed activation is not cached
    Given a tool "remote" whose activation fails
    And a plan "p"
    When I call "remote"
    And I call "remote"
    Then the call raises ToolActivationError
    And "remote" was activated 2 times in plan "p"
    And "remote" is not active in plan "p"

  @req-cache-deactivate-once
  Scenario: The plan end deactivates each tool exactly once, newest first
    Given a tool "first" that reads
    And a tool "second" that reads
    And a tool "third" that reads
    And a plan "p"
    When I call "second"
    And I call "first"
    And I call "third"
    And plan "p" ends
    And plan "p" ends
    Then the tools were deactivated in the order third, first, second
    And "first" was deactivated 1 time in plan "p"

  @req-cache-teardown-errors
  Scenario: A failing deactivation does not stop the others
    Given a tool "good" that reads
    And a tool "bad" whose deactivation fails
    And a plan "p"
    When I call "good"
    And I call "bad"
    And plan "p" ends
    Then 1 deactivation error is reported
    And "good" was deactivated 1 time in plan "p"

  @req-cache-teardown-errors
  Scenario: A hanging deactivation is abandoned after the timeout
    Given a tool "good" that reads
    And a tool "stuck" whose deactivation hangs
    And a plan "p"
    When I call "good"
    And I call "stuck"
    And plan "p" ends
    Then 1 deactivation error is reported
    And "good" was deactivated 1 time in plan "p"

  @req-cache-close
  Scenario: Closing the runtime ends every open plan
    Given a tool "reader" that reads
    And a plan "a"
    And a plan "b"
    When I call "reader" in plan "a"
    And I call "reader" in plan "b"
    And the runtime is closed
    Then "reader" was deactivated 1 time in plan "a"
    And "reader" was deactivated 1 time in plan "b"
