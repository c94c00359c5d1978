Feature: Plan scopes
  A plan scope (`with runtime.plan()` or `async with runtime.aplan()`) ends its
  plan however it is left: normally, by an exception, by a keyboard interrupt
  or by cancellation. Ending deactivates every tool the plan activated, and
  never raises for a deactivate that fails.

  @req-scope-normal
  Scenario: Leaving a plan scope normally ends the plan
    Given a tool "echo" that reads
    When a plan scope "p1" that calls "echo" is left normally
    Then plan "p1" has ended
    And "echo" was deactivated 1 time in plan "p1"
    And nothing escaped the scope

  @req-scope-exception
  Scenario: Leaving a plan scope by an exception ends the plan and lets the exception through
    Given a tool "echo" that reads
    When a plan scope "p1" that calls "echo" is left by an exception
    Then plan "p1" has ended
    And "echo" was deactivated 1 time in plan "p1"
    And a ValueError escaped the scope

  @req-scope-interrupt
  Scenario: Leaving a plan scope by a keyboard interrupt ends the plan and lets it through
    Given a tool "echo" that reads
    When a plan scope "p1" that calls "echo" is left by a keyboard interrupt
    Then plan "p1" has ended
    And "echo" was deactivated 1 time in plan "p1"
    And a KeyboardInterrupt escaped the scope

  @req-scope-exception
  Scenario: A deactivate that fails inside a scope does not replace the scope's own exception
    Given a tool "broken" whose deactivation fails with OSError
    When a plan scope "p1" that calls "broken" is left by an exception
    Then plan "p1" has ended
    And "broken" was deactivated 1 time in plan "p1"
    And a ValueError escaped the scope

  @req-scope-never-raises
  Scenario: A deactivate that fails does not make a normal scope exit raise
    Given a tool "broken" whose deactivation fails with OSError
    When a plan scope "p1" that calls "broken" is left normally
    Then plan "p1" has ended
    And nothing escaped the scope

  @req-scope-async
  Scenario Outline: Leaving an async plan scope <how> ends the plan and awaits async deactivation
    Given an async tool "fetch" that returns JSON {"ok": true}
    When an async plan scope "p1" that awaits "fetch" is left <how>
    Then plan "p1" has ended
    And "fetch" was deactivated 1 time in plan "p1"
    And <escaped> escaped the scope

    Examples:
      | how                  | escaped              |
      | normally             | nothing              |
      | by an exception      | a ValueError         |
      | by a keyboard interrupt | a KeyboardInterrupt |

  @req-scope-cancelled
  Scenario: A plan scope whose plan is cancelled still deactivates when it is left
    Given a tool "echo" that reads
    When a plan scope "p1" that calls "echo" is cancelled and left normally
    Then plan "p1" has ended
    And "echo" was deactivated 1 time in plan "p1"
    And nothing escaped the scope

  @req-scope-plan-options
  Scenario: A plan scope passes its flags and metadata to the context
    Given a tool "rm" with writes true and checkpointable true
    When a read-only plan scope "p1" with metadata owner "ops" calls "rm"
    Then the call raises ToolAccessDeniedError
    And plan "p1" carries the metadata owner "ops"
    And plan "p1" has ended

  @req-plan-end-drain
  Scenario: Ending a plan while a call runs stops the call before deactivating
    Given a plan "p1"
    And a sync tool "indexer" that works until its call is cancelled
    When plan "p1" ends while "indexer" runs
    Then the call raises ToolCancelledError
    And the error message mentions "ended"
    And "indexer" stopped before it was deactivated
    And a new call of "indexer" in plan "p1" raises ToolRuntimeError
