Feature: The four stages and the seven steps of a call
  A tool is discovered when it is registered, activated once per plan,
  executed any number of times and deactivated when the plan ends. Each call
  passes, in order: a cancellation check, the capability check, activation,
  input validation, the run itself, output handling, and the recording of
  changes. Every step is shown on its own below.

  @req-discover
  Scenario: Registering a tool discovers it and does nothing else
    Given a tool "echo" that reads
    Then the runtime lists the tool "echo"
    And the stages of "echo" are "discover"

  @req-lifecycle-order
  Scenario: A tool passes through discover, activate, execute and deactivate in order
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo" 2 times
    And plan "p1" ends
    Then the stages of "echo" are "discover, activate, execute, execute, deactivate"

  @req-step-0-unknown
  Scenario: Calling a tool that is not registered raises and is traced
    Given a plan "p1"
    When I call "missing"
    Then the call raises ToolNotFoundError
    And the error names tool "missing" and plan "p1"
    And the last trace has status "error"

  @req-step-0-ended
  Scenario: A plan that has ended runs nothing more
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    And plan "p1" ends
    And I call "echo" in plan "p1"
    Then the call raises ToolRuntimeError
    And the error message mentions "has ended"
    And the last trace has status "error"
    And "echo" was activated 1 time in plan "p1"

  @req-step-0-ended
  Scenario: A closed runtime runs nothing more
    Given a plan "p1"
    And a tool "echo" that reads
    When the runtime is closed
    And I call "echo"
    Then the call raises ToolRuntimeError
    And the error message mentions "closed"
    And "echo" was never activated

  @req-step-1-cancel
  Scenario: Step 1 - a cancelled plan runs nothing and activates nothing
    Given a plan "p1"
    And a tool "echo" that reads
    And plan "p1" is cancelled with reason "user stop"
    When I call "echo"
    Then the call raises ToolCancelledError
    And the error carries the reason "user stop"
    And "echo" was never activated
    And "echo" never ran
    And the last trace has status "cancelled"

  @req-step-2-capability
  Scenario: Step 2 - a call the plan may not make is refused before activation
    Given a read-only plan "ro"
    And a tool "rm" with writes true and checkpointable true
    When I call "rm"
    Then the call raises ToolAccessDeniedError
    And "rm" was never activated
    And the last trace has status "denied"

  @req-step-3-activate
  Scenario: Step 3 - the first call activates the tool before running it
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    Then the call succeeds
    And the stages of "echo" in plan "p1" are "activate, execute"

  @req-step-3-activate
  Scenario: Step 3 - a failed activation raises ToolActivationError and the tool does not run
    Given a plan "p1"
    And a tool "db" whose activation fails with ConnectionError
    When I call "db"
    Then the call raises ToolActivationError
    And the error is caused by ConnectionError
    And the error names tool "db" and plan "p1"
    And "db" never ran
    And the last trace has status "error"

  @req-step-4-input
  Scenario: Step 4 - the tool never sees arguments that fail the input schema
    Given a plan "p1"
    And a tool "count" that takes an integer "n"
    When I call "count" with arguments {"n": "three"}
    Then the call fails with error type "ToolSchemaValidationError"
    And "count" never ran
    And the last trace has status "invalid_input"

  @req-step-4-input
  Scenario: Step 4 - arguments are normalised to JSON before the tool sees them
    Given a plan "p1"
    And a tool "echo-args" that returns its arguments
    When I call "echo-args" with a tuple in its arguments
    Then the call succeeds with output {"items": [1, 2]}
    And the arguments I passed were left as they were

  @req-step-5-run
  Scenario: Step 5 - the tool runs with the validated arguments
    Given a plan "p1"
    And a tool "count" that takes an integer "n"
    When I call "count" with arguments {"n": 3}
    Then the call succeeds with output {"n": 3}
    And the last trace has status "ok"

  @req-step-5-run
  Scenario: Step 5 - an exception raised by the tool becomes a failed result
    Given a plan "p1"
    And a tool "bad" that raises ValueError
    When I call "bad"
    Then the call fails with error type "ValueError"
    And the result keeps the ValueError it came from
    And the last trace has status "error"

  @req-step-5-timeout
  Scenario: Step 5 - a call that overruns its timeout fails as timed out
    Given a plan "p1"
    And a tool "slow" that blocks until the scenario ends
    When I call "slow" with a timeout of 0.2 seconds
    Then the call fails with error type "TimeoutError"
    And the last trace has status "timed_out"

  @req-step-6-output
  Scenario Outline: Step 6 - output is normalised to JSON: <value>
    Given a plan "p1"
    And a tool "out" that returns the Python value "<value>"
    When I call "out"
    Then the call succeeds with output <json>

    Examples:
      | value          | json       |
      | tuple (1, 2)   | [1, 2]     |
      | dataclass x=3  | {"x": 3}   |
      | model x=3      | {"x": 3}   |
      | nested tuples  | [[1], [2]] |

  @req-step-6-output-error
  Scenario Outline: Step 6 - output that cannot be JSON fails the call: <value>
    Given a plan "p1"
    And a tool "out" that returns the Python value "<value>"
    When I call "out"
    Then the call fails with error type "ToolOutputError"
    And the last trace has status "error"

    Examples:
      | value              |
      | NaN                |
      | infinity           |
      | integer key        |
      | list holding itself |

  @req-step-6-output
  Scenario: Step 6 - output is checked against the output schema
    Given a plan "p1"
    And a tool "shaped" with output schema {"type": "object", "required": ["a"]} that returns JSON {"a": 1}
    When I call "shaped"
    Then the call succeeds with output {"a": 1}
    And the last trace reports output_valid true
    And the last trace measures 7 bytes of output

  @req-step-7-changes
  Scenario: Step 7 - changes recorded during the call land in the plan and in the result
    Given a plan "p1"
    And a tool "writer" that records changes to "a.txt, b.txt"
    When I call "writer"
    Then the result lists changes to "a.txt, b.txt"
    And plan "p1" lists changes to "a.txt, b.txt"

  @req-step-7-changes
  Scenario: Step 7 - changes returned in a ToolResult land in the plan too, in order
    Given a plan "p1"
    And a tool "writer" that records a change to "a.txt" and returns one to "b.txt"
    When I call "writer"
    Then the result lists changes to "a.txt, b.txt"
    And plan "p1" lists changes to "a.txt, b.txt"

  @req-step-7-changes
  Scenario: Step 7 - each result lists its own changes while the plan keeps them all
    Given a plan "p1"
    And a tool "w1" that records changes to "a.txt"
    And a tool "w2" that records changes to "b.txt, c.txt"
    When I call "w1"
    And I call "w2"
    Then the result lists changes to "b.txt, c.txt"
    And plan "p1" lists changes to "a.txt, b.txt, c.txt"
