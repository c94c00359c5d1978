Feature: OpenTelemetry spans
  With toolcycle.otel as the runtime's instrumentation, every call becomes an
  execute_tool span, named and described as the OpenTelemetry GenAI semantic
  conventions say, under the span that was current where the call was made.
  What a call was given and what it returned stay out of the spans unless the
  host opts in, and a secret argument stays out even then.

  @req-otel-span
  Scenario: A call is an execute_tool span with the GenAI attributes, under the caller's span
    Given a runtime instrumented with OpenTelemetry
    And a tool "lookup" that reads
    And a plan "p1"
    When I call "lookup" inside the span "agent turn"
    Then the span "execute_tool lookup" is a child of the span "agent turn"
    And the span "execute_tool lookup" has the attributes
      | attribute             | value        |
      | gen_ai.operation.name | execute_tool |
      | gen_ai.tool.name      | lookup       |
      | gen_ai.tool.type      | function     |
      | toolcycle.plan_id     | p1           |
      | toolcycle.status      | ok           |
    And the span "execute_tool lookup" carries the call id of the last trace
    And the span "agent turn" is current again

  @req-otel-span
  Scenario: A failed call is an error span whose error type is the exception's class
    Given a runtime instrumented with OpenTelemetry
    And a tool "bad" that raises ValueError
    And a plan "p1"
    When I call "bad" inside the span "agent turn"
    Then the span "execute_tool bad" has the status ERROR with the last trace's error
    And the span "execute_tool bad" has the attributes
      | attribute        | value      |
      | error.type       | ValueError |
      | toolcycle.status | error      |

  @req-otel-payloads
  Scenario: Arguments and results are not recorded by default
    Given a runtime instrumented with OpenTelemetry
    And a tool "lookup" that reads
    And a plan "p1"
    When I call "lookup" with arguments {"user": "ada", "password": "hunter2-is-secret"}
    Then no span records a payload
    And no span mentions "hunter2-is-secret"

  @req-otel-payloads
  Scenario: With payloads on, the arguments are recorded redacted and the secret never appears
    Given a runtime instrumented with OpenTelemetry that records payloads
    And a tool "lookup" that reads
    And a plan "p1"
    When I call "lookup" with arguments {"user": "ada", "password": "hunter2-is-secret"}
    Then the span "execute_tool lookup" records the arguments {"user": "ada", "password": "[redacted]"}
    And the span "execute_tool lookup" records the result {"ok": true}
    And no span mentions "hunter2-is-secret"
