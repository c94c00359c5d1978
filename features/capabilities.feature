Feature: Capability enforcement
  A plan may be read-only, may require checkpoints, or both. A read-only plan
  refuses tools that write; a plan that requires checkpoints refuses tools
  that cannot be rolled back. Everything else is allowed.

  @req-cap-table
  Scenario Outline: A <plan> plan and a tool with writes <writes>, checkpointable <checkpointable>
    Given a <plan> plan "p"
    And a tool "t" with writes <writes> and checkpointable <checkpointable>
    When I call "t"
    Then the outcome is "<outcome>"

    @req-cap-read-only-denied
    Examples: Read-only plans refuse tools that write
      | plan      | writes | checkpointable | outcome               |
      | read-only | true   | true           | ToolAccessDeniedError |
      | read-only | true   | false          | ToolAccessDeniedError |

    @req-cap-checkpoint-denied
    Examples: Checkpoint plans refuse tools that write and cannot be rolled back
      | plan       | writes | checkpointable | outcome                     |
      | checkpoint | true   | false          | ToolCheckpointRequiredError |

    @req-cap-both-denied
    Examples: A plan with both flags applies both rules, and the read-only denial wins a tie
      | plan                 | writes | checkpointable | outcome                     |
      | read-only checkpoint | true   | false          | ToolAccessDeniedError       |
      | read-only checkpoint | true   | true           | ToolAccessDeniedError       |

    @req-cap-allowed
    Examples: The allowed combinations
      | plan                 | writes | checkpointable | outcome |
      | ordinary             | true   | false          | allowed |
      | ordinary             | false  | true           | allowed |
      | read-only            | false  | false          | allowed |
      | read-only            | false  | true           | allowed |
      | checkpoint           | true   | true           | allowed |
      | checkpoint           | false  | true           | allowed |
      | read-only checkpoint | false  | true           | allowed |

    @req-cap-reader-checkpointable
    Examples: A tool that does not write has nothing to undo, so checkpoint plans run it
      | plan                 | writes | checkpointable | outcome |
      | checkpoint           | false  | false          | allowed |
      | read-only checkpoint | false  | false          | allowed |

  @req-cap-safe-default
  Scenario Outline: A tool that declares no capability is treated as writing and not checkpointable
    Given a <plan> plan "p"
    And a tool "t" with the default capability
    When I call "t"
    Then the outcome is "<outcome>"

    Examples:
      | plan       | outcome                     |
      | read-only  | ToolAccessDeniedError       |
      | checkpoint | ToolCheckpointRequiredError |
      | ordinary   | allowed                     |

  @req-cap-denied-trace
  Scenario: A denied call is traced as denied and the error names the tool and the plan
    Given a read-only plan "audit"
    And a tool "rm" with writes true and checkpointable false
    When I call "rm"
    Then the call raises ToolAccessDeniedError
    And the error names tool "rm" and plan "audit"
    And the last trace has status "denied"
    And the last trace reports success false
    And "rm" was never activated

  @req-cap-denied-trace
  Scenario: A denial in one plan does not affect another plan
    Given a read-only plan "audit"
    And a plan "work"
    And a tool "rm" with writes true and checkpointable false
    When I call "rm" in plan "audit"
    And I call "rm" in plan "work"
    Then the call succeeds
    And the trace statuses are "denied, ok"
