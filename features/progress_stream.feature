Feature: Progress as a stream
  A host that shows a long tool's progress live iterates the call instead of
  wiring a callback: runtime.astream (a call it chose) and runtime.astream_call
  (a model's tool call) yield each progress report as the tool makes it, then
  the result. Leaving the loop early cancels the call. Each report is also an
  event on the call's OpenTelemetry span.

  @req-progress-stream
  Scenario: A streamed call yields each report while the tool runs, then its result
    Given a tool "crawl" that reports 3 steps and waits after the first until the host has seen it
    And a plan "p1"
    When I stream the call of "crawl"
    Then the stream gave 3 progress events of "crawl", then the result
    And the host saw the first event before the tool finished
    And the last trace has status "ok"

  @req-progress-stream
  Scenario: A model's tool call streamed ends with the answer to that call
    Given a tool "crawl" that reports 3 steps and waits after the first until the host has seen it
    And a plan "p1"
    When I stream the model's call "call_9" of "crawl"
    Then the stream gave 3 progress events of "crawl", then the result
    And the result answers the model's call "call_9"

  @req-progress-stream-cancel
  Scenario: Leaving the loop after the first event cancels the call
    Given a tool "watch" that reports once and then runs until cancelled
    And a plan "p1"
    When I stream the call of "watch" and leave the loop after the first event
    Then the last trace has status "cancelled"
    And no task of the stream is left running

  @req-progress-span
  Scenario: Each report is an event on the call's span
    Given a runtime instrumented with OpenTelemetry
    And a tool "crawl" that reports 3 steps and waits after the first until the host has seen it
    And a plan "p1"
    When I stream the call of "crawl"
    Then the span "execute_tool crawl" has 3 "toolcycle.progress" events, progress 1 to 3
