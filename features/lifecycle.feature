Feature: The four stages and the execute steps
  A tool is discovered at registration, activated on its first call in a plan,
  executed through the runtime's pipeline, and deactivated when the plan ends.

  @req-stage-discover
  Scenario: Registration discovers a tool without activating it
    Given a tool "reader" that reads
    And a plan "p"
    Then "reader" was never activated

  @req-stage-activate @req-step-3-activate
  Scenario: The first call in a plan activates the tool
    Given a tool "reader" that reads
    And a plan "p"
    When I call "reader"
    Then the call succeeds
    And "reader" was activated 1 time in plan "p"

  @req-stage-execute @req-step-5-run
  Scenario: A call returns the tool's output
    Given a tool "greeter" that returns {"greeting": "hello"}
    And a plan "p"
    When I call "greeter"
    Then the call succeeds with output {"greeting": "hello"}

  @req-stage-deactivate
  Scenario: The plan end deactivates what the plan activated
    Given a tool "reader" that reads
    And a plan "p"
    When I call "reader"
    And plan "p" ends
    Then "reader" was deactivated 1 time in plan "p"
    And plan "p" has ended

  @req-step-1-cancel
  Scenario: Cancellation is checked before anything else
    Given a tool "reader" that reads
    And a plan "p"
    And plan "p" is cancelled with reason "user stop"
    When I call "reader"
    Then the call raises ToolCancelledError
    And "reader" was never activated

  @req-step-2-capabilities
  Scenario: The capability check runs before activation
    Given a tool "writer" that writes and can be rolled back
    And a read-only plan "p"
    When I call "writer"
    Then the call raises ToolAccessDeniedError
    And "writer" was never activated

  @req-step-4-input
  Scenario: Arguments are validated before the tool runs
    Given a tool "counter" that takes an integer "n"
    And a plan "p"
    When I call "counter" with {"n": "three"}
    Then the call is rejected at "/n" by the keyword "type"
    And the last trace has status "invalid_input"

  @req-step-6-output
  Scenario: The output is checked against the output schema
    Given a tool "typed" that returns "text" against the output schema {"type": "integer"}
    And a plan "p"
    When I call "typed"
    Then the call succeeds
    And the last trace reports output_valid "false"

  @req-step-7-changes
  Scenario: Changes a tool records land in the plan's context, in order
    Given a tool "editor" that records 2 changes
    And a plan "p"
    When I call "editor"
    And I call "editor"
    Then plan "p" has recorded 4 changes
    And the call's result lists 2 changes

  @req-step-5-run
  Scenario: A tool that raises gives a failed result, not an exception
    Given a tool "broken" that raises ValueError
    And a plan "p"
    When I call "broken"
    Then the call fails with error type "ValueError"
    And re-raising the result raises ToolExecutionError caused by ValueError
