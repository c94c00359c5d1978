Feature: Plan scopes
  A plan scope ends its plan however the block is left.

  @req-plan-scope
  Scenario: Leaving a scope by an exception ends the plan
    Given a tool "reader" that reads
    When a plan scope "p" that calls "reader" is left by an exception
    Then the interrupt reached the caller
    And "reader" was deactivated 1 time in plan "p"

  @req-plan-scope
  Scenario: Leaving a scope by a keyboard interrupt ends the plan
    Given a tool "reader" that reads
    When a plan scope "p" that calls "reader" is left by a keyboard interrupt
    Then the interrupt reached the caller
    And "reader" was deactivated 1 time in plan "p"

  @req-plan-ended
  Scenario: An ended plan runs nothing
    Given a tool "reader" that reads
    And a plan "p"
    When plan "p" ends
    Then calling "reader" in plan "p" fails because the plan has ended
    And ending it again does nothing
