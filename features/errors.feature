Feature: The error hierarchy

  @req-errors-tree
  Scenario: Capability errors are runtime errors
    Given a tool "writer" that writes and can be rolled back
    And a read-only plan "p"
    When I call "writer"
    Then the call raises ToolAccessDeniedError
    And the error is a ToolRuntimeError

  @req-errors-tree
  Scenario: An unknown tool is a ToolNotFoundError
    Given a plan "p"
    When I call "missing"
    Then the call raises ToolNotFoundError
    And the error is a ToolRuntimeError
    And the last trace has status "error"

  @req-errors-tree
  Scenario: A failed activation is a ToolActivationError
    Given a tool "remote" whose activation fails
    And a plan "p"
    When I call "remote"
    Then the call raises ToolActivationError
    And the error names tool "remote" and plan "p"

  @req-errors-tree
  Scenario: Cancellation stands apart from runtime errors
    Given a tool "reader" that reads
    And a plan "p"
    And plan "p" is cancelled with reason "stop"
    When I call "reader"
    Then the call raises ToolCancelledError
    And the error is not a ToolRuntimeError

  @req-errors-exports
  Scenario Outline: Every error class is exported
    Then the package exports <name>

    Examples:
      | name                        |
      | ToolRuntimeError            |
      | ToolAccessDeniedError       |
      | ToolCheckpointRequiredError |
      | ToolNotActivatedError       |
      | ToolActivationError         |
      | ToolExecutionError          |
      | ToolDeactivationError       |
      | ToolNotFoundError           |
      | ToolCancelledError          |
      | ToolSchemaValidationError   |
