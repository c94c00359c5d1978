Feature: Traces
  Every call that reaches execute yields exactly one trace.

  @req-trace-fields
  Scenario: A successful call's trace carries every field
    Given a tool "greeter" that returns {"greeting": "héllo"}
    And a plan "p"
    When I call "greeter"
    Then 1 trace was delivered
    And the last trace names tool "greeter" and plan "p"
    And the last trace has a call id
    And the last trace has UTC ISO-8601 start and end times in order
    And the last trace has a non-negative duration
    And the result size is the UTF-8 length of the compact JSON of {"greeting": "héllo"}
    And the last trace reports success "true"
    And the last trace has status "ok"
    And the last trace reports output_valid "none"

  @req-trace-every-call
  Scenario: Failures, denials and rejections are traced too
    Given a tool "broken" that raises KeyError
    And a tool "writer" that writes and can be rolled back
    And a tool "counter" that takes an integer "n"
    And a read-only plan "p"
    When I call "broken"
    And I call "writer"
    And I call "counter" with {"n": "x"}
    Then the trace statuses are error, denied, invalid_input
    And the last trace reports success "false"
    And the last trace reports the error "do not match"

  @req-trace-listener-errors
  Scenario: A listener that raises does not break the call
    Given a trace listener that raises
    And a tool "reader" that reads
    And a plan "p"
    When I call "reader"
    Then the call succeeds
    And 1 trace was delivered
