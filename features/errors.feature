Feature: Errors and their hierarchy
  Failures and misuses of the runtime are ToolRuntimeErrors. Cancellation and
  schema problems stand apart, so that code reporting failed runs does not
  swallow a cancellation. Every error names the tool and plan it concerns.

  @req-error-hierarchy
  Scenario Outline: <error> is a ToolRuntimeError
    Then the class <error> is a ToolRuntimeError
    And the package exports <error>

    Examples:
      | error                       |
      | ToolAccessDeniedError       |
      | ToolCheckpointRequiredError |
      | ToolNotActivatedError       |
      | ToolActivationError         |
      | ToolExecutionError          |
      | ToolDeactivationError       |
      | ToolNotFoundError           |
      | ToolRegistrationError       |
      | ToolDefinitionError         |

  @req-error-hierarchy
  Scenario: A function that cannot become a tool is a registration error
    Then the class ToolDefinitionError is a ToolRegistrationError

  @req-error-standalone
  Scenario Outline: <error> stands apart from ToolRuntimeError
    Then the class <error> is not a ToolRuntimeError
    And the class <error> can be caught as Exception
    And the package exports <error>

    Examples:
      | error                     |
      | ToolCancelledError        |
      | ToolSchemaValidationError |

  @req-error-standalone
  Scenario: A handler for ToolRuntimeError does not swallow a cancellation
    Given a plan "p1"
    And a tool "echo" that reads
    And plan "p1" is cancelled with reason "stop"
    When I call "echo" inside a handler for ToolRuntimeError
    Then the handler did not catch it and ToolCancelledError escaped

  @req-error-access-denied
  Scenario: ToolAccessDeniedError is raised for a writing tool in a read-only plan
    Given a read-only plan "p1"
    And a tool "rm" with writes true and checkpointable true
    When I call "rm"
    Then the call raises ToolAccessDeniedError
    And the error names tool "rm" and plan "p1"
    And the error message mentions "read-only"

  @req-error-checkpoint-required
  Scenario: ToolCheckpointRequiredError is raised for a tool that cannot be rolled back
    Given a checkpoint plan "p1"
    And a tool "send" with writes true and checkpointable false
    When I call "send"
    Then the call raises ToolCheckpointRequiredError
    And the error names tool "send" and plan "p1"

  @req-error-not-activated
  Scenario: ToolNotActivatedError is raised when activation on demand is off
    Given a runtime that does not activate tools on demand
    And a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    Then the call raises ToolNotActivatedError
    And the error names tool "echo" and plan "p1"
    When I activate "echo" ahead of its first call
    And I call "echo"
    Then the call succeeds

  @req-error-activation
  Scenario: ToolActivationError chains what activate raised
    Given a plan "p1"
    And a tool "db" whose activation fails with ConnectionError
    When I call "db"
    Then the call raises ToolActivationError
    And the error is caused by ConnectionError
    And the error names tool "db" and plan "p1"

  @req-error-execution
  Scenario: ToolExecutionError is raised by raise_for_error, chaining what the tool raised
    Given a plan "p1"
    And a tool "bad" that raises KeyError
    When I call "bad"
    Then the call fails with error type "KeyError"
    And the result re-raises as ToolExecutionError caused by KeyError
    And the re-raised error names tool "bad" and plan "p1"

  @req-error-execution
  Scenario: raise_for_error does nothing for a successful call
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    Then the result does not re-raise

  @req-error-deactivation
  Scenario: ToolDeactivationError is returned at plan end, never raised
    Given a plan "p1"
    And a tool "broken" whose deactivation fails with OSError
    When I call "broken"
    And plan "p1" ends
    Then the plan end reported 1 deactivation error
    And the deactivation error is a ToolDeactivationError
    And the deactivation error names tool "broken" and plan "p1"

  @req-error-not-found
  Scenario: ToolNotFoundError is raised for an unknown name, also when unregistering
    Given a plan "p1"
    When I call "ghost"
    Then the call raises ToolNotFoundError
    When I unregister the tool "ghost"
    Then unregistering raises ToolNotFoundError

  @req-error-registration
  Scenario: ToolRegistrationError is raised for a name that is taken
    Given a tool "echo" that reads
    When I register another tool named "echo"
    Then the registration raises ToolRegistrationError
    And the error message mentions "already registered"

  @req-error-registration
  Scenario: ToolRegistrationError is raised when discover fails
    When I register a tool whose discover raises
    Then the registration raises ToolRegistrationError
    And the error is caused by RuntimeError

  @req-error-definition
  Scenario: ToolDefinitionError is raised for a function that cannot be described as a tool
    When I register a lambda as a tool
    Then the registration raises ToolDefinitionError

  @req-error-cancelled
  Scenario: ToolCancelledError carries the reason, the tool and the plan
    Given a plan "p1"
    And a tool "echo" that reads
    And plan "p1" is cancelled with reason "shutdown"
    When I call "echo"
    Then the call raises ToolCancelledError
    And the error carries the reason "shutdown"
    And the error names tool "echo" and plan "p1"

  @req-error-schema
  Scenario: ToolSchemaValidationError carries the validation issues of a bad schema
    When I register a tool "bad" whose input schema is {"type": "object", "required": "n"}
    Then the registration raises ToolSchemaValidationError
    And the schema error points at "/required"
