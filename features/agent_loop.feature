Feature: The agent loop: tool definitions for a model, its tool calls, their results
  A framework shows the model the tools a plan may run, in the provider's
  format, hands each tool call to the runtime as it arrived, and passes back
  the message the result builds. Nothing the model gets wrong raises, and a
  batch of calls runs at once without losing any call's result.

  @req-loop-definitions
  Scenario: A read-only plan offers the model only the tools that do not write
    Given a tool "lookup" that reads
    And a tool "delete" with writes true and checkpointable false
    And a read-only plan "p1"
    When I ask for the tool definitions in the "anthropic" format
    Then the model is offered the tools "lookup"

  @req-loop-definitions
  Scenario: A name the provider does not accept is mapped there and back
    Given a tool "notes.save" that reads
    And a plan "p1"
    When I ask for the tool definitions in the "openai" format
    Then the model is offered one tool whose name starts with "notes_save_"
    When the model calls that tool in the "openai" format with id "call_7"
    Then the result answers "call_7" in a role=tool message
    And the trace names the tool "notes.save"

  @req-loop-dispatch @req-loop-traced
  Scenario Outline: A model's mistake comes back as a result it can read, and is traced
    Given a tool "lookup" that reads
    And a plan "p1"
    When the model sends the OpenAI tool call <call>
    Then the call failed with error type "<error_type>" and did not raise
    And the tool-result message quotes the call id "c1"
    And 1 trace was delivered
    And the last trace has status "<status>"
    And the last trace names tool "<tool>" and plan "p1"
    And the result carries the last trace

    Examples:
      | call                                                                                    | error_type        | status        | tool    |
      | {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{"}}      | ToolCallError     | invalid_input | lookup  |
      | {"id": "c1", "type": "function", "function": {"name": "look_up", "arguments": "{}"}}    | ToolNotFoundError | error         | look_up |

  @req-loop-dispatch @req-loop-traced
  Scenario: A tool the plan may not run is a failed result, not an exception
    Given a tool "delete" with writes true and checkpointable false
    And a read-only plan "p1"
    When the model sends the OpenAI tool call {"id": "c1", "type": "function", "function": {"name": "delete", "arguments": "{}"}}
    Then the call failed with error type "ToolAccessDeniedError" and did not raise
    And the last trace has status "denied"
    And the result carries the last trace

  @req-loop-batch
  Scenario: A batch answers every call in order, whatever fails
    Given a tool "lookup" that reads
    And a tool "boom" that raises ValueError
    And a plan "p1"
    When the model sends a batch of calls to "lookup, boom, missing, lookup"
    Then the batch answered the ids "b0, b1, b2, b3" with successes "yes, no, no, yes"

  @req-loop-batch
  Scenario: A sequential tool runs alone in its batch
    Given sequential tools that record whether they ran alone
    And a plan "p1"
    When the model sends a batch of calls to "step, commit, step, step"
    Then "commit" ran alone
