Feature: JSON Schema validation of inputs and outputs

  @req-validate-input
  Scenario: Invalid arguments give a failed result and the tool does not run
    Given a tool "counter" that takes an integer "n"
    And a plan "p"
    When I call "counter" with {"n": 1.5}
    Then the call is rejected at "/n" by the keyword "type"

  @req-validate-input
  Scenario: Valid arguments reach the tool
    Given a tool "counter" that takes an integer "n"
    And a plan "p"
    When I call "counter" with {"n": 7}
    Then the call succeeds with output {"n": 7}

  @req-validate-input
  Scenario: Arguments that are not an object are rejected
    Given a tool "counter" that takes an integer "n"
    And a plan "p"
    When I call "counter" with arguments that are not an object
    Then the call is rejected at "/" by the keyword "type"

  @req-validate-output
  Scenario: A mismatching output is kept but flagged
    Given a tool "typed" that returns "text" against the output schema {"type": "integer"}
    And a plan "p"
    When I call "typed"
    Then the call succeeds with output "text"
    And the last trace reports output_valid "false"

  @req-validate-strict-output
  Scenario: With strict output a mismatching output fails the call
    Given a strict-output runtime with a tool "typed" that returns "text" against the output schema {"type": "integer"}
    And a plan "p"
    When I call "typed"
    Then the call fails with error type "ToolSchemaValidationError"
