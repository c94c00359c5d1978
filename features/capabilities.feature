Feature: Capability enforcement
  A read-only plan never runs a tool that writes, and a plan that requires
  checkpoints never runs a tool that cannot be rolled back.

  @req-cap-read-only
  Scenario: A read-only plan refuses a writing tool
    Given a tool "writer" that writes and can be rolled back
    And a read-only plan "p"
    When I call "writer"
    Then the call raises ToolAccessDeniedError
    And the error names tool "writer" and plan "p"
    And the last trace has status "denied"

  @req-cap-read-only
  Scenario: A read-only plan runs a reading tool
    Given a tool "reader" that reads
    And a read-only plan "p"
    When I call "reader"
    Then the call succeeds

  @req-cap-checkpoint
  Scenario: A checkpoint plan refuses a tool that cannot be rolled back
    Given a tool "writer" that writes and cannot be rolled back
    And a plan "p" that requires checkpoints
    When I call "writer"
    Then the call raises ToolCheckpointRequiredError
    And "writer" was never activated

  @req-cap-checkpoint
  Scenario: A checkpoint plan runs a tool that can be rolled back
    Given a tool "writer" that writes and can be rolled back
    And a plan "p" that requires checkpoints
    When I call "writer"
    Then the call succeeds

  @req-cap-checkpoint
  Scenario: The checkpoint rule applies to reading tools too
    Given a tool "scanner" that reads and cannot be rolled back
    And a plan "p" that requires checkpoints
    When I call "scanner"
    Then the call raises ToolCheckpointRequiredError

  @req-cap-both
  Scenario: When both rules refuse, the read-only denial is raised
    Given a tool "writer" that writes and cannot be rolled back
    And a read-only plan "p" that requires checkpoints
    When I call "writer"
    Then the call raises ToolAccessDeniedError

  @req-cap-unrestricted
  Scenario: An unrestricted plan runs any tool
    Given a tool "writer" that writes and cannot be rolled back
    And a plan "p"
    When I call "writer"
    Then the call succeeds
