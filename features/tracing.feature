Feature: Execution tracing
  Every call that reaches the runtime yields exactly one trace, delivered to
  the tracer and to every listener before the call returns or raises. A trace
  names the tool, the plan and the call, says when the call started and ended
  (ISO-8601, UTC), how long it took, how large its output was, whether it
  succeeded, with which status, which error, and whether the output matched
  its schema.

  @req-trace-one-per-call
  Scenario: Each call yields one trace with its own call id
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo" 3 times
    Then 3 traces were delivered
    And every trace has its own call id

  @req-trace-identity
  Scenario: A trace names the tool, the plan and the call
    Given a plan "nightly"
    And a tool "echo" that reads
    When I call "echo"
    Then the last trace names tool "echo" and plan "nightly"
    And the last trace has a call id
    And the result carries the last trace

  @req-trace-times
  Scenario: Start and end are ISO-8601 UTC times, in order, and the duration is not negative
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    Then the last trace has UTC ISO-8601 start and end times in order
    And the last trace has a duration that is not negative

  @req-trace-times
  Scenario: The times and the duration come from the runtime's clock and timer
    Given a runtime whose clock reads 1700000000 then 1700000001.5 and whose timer reads 10 then 10.25
    And a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    Then the last trace started at "2023-11-14T22:13:20.000000+00:00"
    And the last trace ended at "2023-11-14T22:13:21.500000+00:00"
    And the last trace took 250 milliseconds

  @req-trace-size
  Scenario Outline: The result size is the UTF-8 size of the compact JSON output: <output>
    Given a plan "p1"
    And a tool "out" that returns JSON <output>
    When I call "out"
    Then the last trace measures <bytes> bytes of output
    And the result size is the UTF-8 length of the compact JSON of <output>

    Examples:
      | output              | bytes |
      | {"a": [1, 2]}       | 11    |
      | {"word": "héllo"}   | 17    |
      | "日本"              | 8     |
      | null                | 4     |

  @req-trace-size
  Scenario: A call that produced no output measures zero bytes
    Given a plan "p1"
    And a tool "bad" that raises ValueError
    When I call "bad"
    Then the last trace measures 0 bytes of output

  @req-trace-success-error
  Scenario: A successful call is traced with success and no error
    Given a plan "p1"
    And a tool "echo" that reads
    When I call "echo"
    Then the last trace reports success true
    And the last trace reports no error

  @req-trace-success-error
  Scenario: A failed call is traced with the failure and its error
    Given a plan "p1"
    And a tool "bad" that raises ValueError
    When I call "bad"
    Then the last trace reports success false
    And the last trace reports the error "bad value"
    And the last trace reports the error type "ValueError"

  @req-trace-status
  Scenario Outline: A call that <how> is traced with status "<status>"
    Given a <plan> plan "p1"
    And <tool>
    When <call>
    Then 1 trace was delivered
    And the last trace has status "<status>"
    And the last trace reports success <success>

    Examples:
      | how              | plan      | tool                                                        | call                                          | status        | success |
      | succeeds         | ordinary  | a tool "t" that reads                                       | I call "t"                                    | ok            | true    |
      | raises           | ordinary  | a tool "t" that raises KeyError                             | I call "t"                                    | error         | false   |
      | is refused       | read-only | a tool "t" with writes true and checkpointable true          | I call "t"                                    | denied        | false   |
      | has bad input    | ordinary  | a tool "t" that takes an integer "n"                        | I call "t" with arguments {"n": null}         | invalid_input | false   |
      | is cancelled     | ordinary  | a tool "t" that checks the token until it is cancelled      | I call "t" and cancel the plan while it runs  | cancelled     | false   |
      | overruns         | ordinary  | a tool "t" that blocks until the scenario ends              | I call "t" with a timeout of 0.2 seconds      | timed_out     | false   |
      | is not found     | ordinary  | a tool "other" that reads                                   | I call "t"                                    | error         | false   |

  @req-trace-output-valid
  Scenario Outline: output_valid is <flag> when <when>
    Given a plan "p1"
    And <tool>
    When I call "t"
    Then the last trace reports output_valid <flag>

    Examples:
      | when                       | tool                                                                                     | flag  |
      | the output matches         | a tool "t" with output schema {"type": "integer"} that returns JSON 3                    | true  |
      | the output does not match  | a tool "t" with output schema {"type": "integer"} that returns JSON "three"              | false |
      | there is no output schema  | a tool "t" that returns JSON 3                                                           | none  |
      | the call failed            | a tool "t" that raises ValueError                                                        | none  |

  @req-trace-listeners
  Scenario: A listener that raises does not break the call or the other listeners
    Given a plan "p1"
    And a trace listener that raises
    And a second trace listener
    And a tool "echo" that reads
    When I call "echo"
    Then the call succeeds
    And the second listener received 1 trace

  @req-trace-listeners
  Scenario: A removed listener receives no more traces
    Given a plan "p1"
    And a second trace listener
    And a tool "echo" that reads
    When I call "echo"
    And the second listener is removed
    And I call "echo"
    Then the second listener received 1 trace
    And 2 traces were delivered
