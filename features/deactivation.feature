Feature: Deactivation at the end of a plan
  When a plan ends, every tool it activated is deactivated exactly once, in
  the reverse order of activation. A deactivate that fails or hangs is
  reported, never raised, and does not stop the others.

  @req-deactivate-once
  Scenario: Every activated tool is deactivated exactly once, unused tools not at all
    Given a plan "p1"
    And a tool "a" that reads
    And a tool "b" that reads
    And a tool "unused" that reads
    When I call "a" 2 times
    And I call "b"
    And plan "p1" ends
    Then "a" was deactivated 1 time in plan "p1"
    And "b" was deactivated 1 time in plan "p1"
    And "unused" was deactivated 0 times in plan "p1"
    And the plan end reported 0 deactivation errors

  @req-deactivate-reverse-order
  Scenario: Tools are deactivated in the reverse order of their activation
    Given a plan "p1"
    And a tool "first" that reads
    And a tool "second" that reads
    And a tool "third" that reads
    When I call "second"
    And I call "first"
    And I call "third"
    And I call "second"
    And plan "p1" ends
    Then the tools were activated in the order "second, first, third"
    And the tools were deactivated in the order "third, first, second"

  @req-deactivate-idempotent-end
  Scenario: Ending a plan twice deactivates nothing the second time
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    And plan "p1" ends
    And plan "p1" ends
    Then the plan end reported 0 deactivation errors
    And "echo" was deactivated 1 time in plan "p1"
    And plan "p1" has ended

  @req-deactivate-failure-isolated
  Scenario: A deactivate that raises is reported and the other tools are still deactivated
    Given a plan "p1"
    And a tool "a" that reads
    And a tool "broken" whose deactivation fails with OSError
    And a tool "c" that reads
    When I call "a"
    And I call "broken"
    And I call "c"
    And plan "p1" ends
    Then the plan end reported 1 deactivation error
    And the deactivation error names tool "broken" and plan "p1"
    And the deactivation error is caused by OSError
    And the tools were deactivated in the order "c, broken, a"

  @req-deactivate-hang-isolated
  Scenario: A deactivate that hangs is abandoned after the timeout and the others still run
    Given a runtime whose deactivate timeout is 0.2 seconds
    And a plan "p1"
    And a tool "a" that reads
    And a tool "stuck" whose deactivation blocks until the scenario ends
    And a tool "c" that reads
    When I call "a"
    And I call "stuck"
    And I call "c"
    And plan "p1" ends
    Then the plan end reported 1 deactivation error
    And the deactivation error names tool "stuck" and plan "p1"
    And the deactivation error message mentions "did not finish"
    And the tools were deactivated in the order "c, stuck, a"

  @req-deactivate-hang-isolated
  Scenario: An async deactivate that hangs is abandoned after the timeout as well
    Given a runtime whose deactivate timeout is 0.2 seconds
    And a plan "p1"
    And an async tool "stuck" whose deactivation never finishes
    And an async tool "fine" that returns JSON {"ok": true}
    When I await "fine, stuck" in plan "p1" and then end the plan asynchronously
    Then the plan end reported 1 deactivation error
    And the deactivation error names tool "stuck" and plan "p1"
    And "fine" was deactivated 1 time in plan "p1"

  @req-deactivate-unregistered
  Scenario: A tool unregistered during a plan is still deactivated when the plan ends
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    And I unregister the tool "echo"
    And plan "p1" ends
    Then "echo" was deactivated 1 time in plan "p1"
    And the runtime does not list the tool "echo"

  @req-deactivate-on-close
  Scenario: Closing the runtime ends every plan still open
    Given a plan "p1"
    And a plan "p2"
    And a tool "echo" that reads
    When I call "echo" in plan "p1"
    And I call "echo" in plan "p2"
    And the runtime is closed
    Then "echo" was deactivated 1 time in plan "p1"
    And "echo" was deactivated 1 time in plan "p2"
    And plan "p1" has ended
    And plan "p2" has ended
