Feature: Retries
  A model fixes what it got wrong when it is told what to fix: an invalid input,
  or a tool raising ModelRetry, is a failed result that says so, and counts
  against the tool's max_retries in the plan. Past the limit, the result says
  the limit is reached. Separately, an idempotent tool with a RetryPolicy runs
  again within one call after a transient fault, and each attempt is traced.

  @req-retry-model
  Scenario: A tool asks the model for another call, until its retries run out
    Given a plan for retries
    And a division tool that asks for another divisor than 0, allowing 1 retry
    When the model divides 1 by 0
    Then the answer is a retryable failure with 1 retry left
    And the model reads "pick another divisor" in the answer
    When the model divides 1 by 0
    Then the answer is a failure the model may not retry
    And the model reads "retry limit of tool 'divide' is reached" in the answer

  @req-retry-model
  Scenario: An invalid input counts against the same retries
    Given a plan for retries
    And a division tool that asks for another divisor than 0, allowing 1 retry
    When the model divides "one" by 2
    Then the answer is a retryable failure with 1 retry left
    And the model reads "Correct the arguments" in the answer
    When the model divides 1 by 0
    Then the answer is a failure the model may not retry

  @req-retry-reset
  Scenario: A call that returns starts the count anew and says which retry it was
    Given a plan for retries
    And a division tool that asks for another divisor than 0, allowing 1 retry
    When the model divides 1 by 0
    And the model divides 4 by 2
    Then the answer is a success whose trace says it was retry 1
    When the model divides 1 by 0
    Then the answer is a retryable failure with 1 retry left

  @req-retry-tool-failed
  Scenario: A tool raising ToolFailed fails without a retry
    Given a plan for retries
    And a tool that reports "the backend says no" with ToolFailed
    When the model calls the reporting tool twice
    Then both answers fail with "the backend says no" and offer no retry

  @req-retry-transient
  Scenario: An idempotent tool retries a transient fault within one call
    Given a plan for retries
    And an idempotent tool that drops its connection 2 times, with 3 attempts
    When the host runs the flaky tool
    Then the result succeeds after 3 attempts
    And the trace lists the attempts "ConnectionError, ConnectionError, ok"

  @req-retry-transient
  Scenario: Attempts run out and the last fault is the result
    Given a plan for retries
    And an idempotent tool that drops its connection 5 times, with 3 attempts
    When the host runs the flaky tool
    Then the result fails with "ConnectionError" after 3 attempts

  @req-retry-idempotent-only
  Scenario: A retry policy needs an idempotent tool
    When a tool that is not idempotent is registered with a retry policy
    Then registration is refused because the tool is not idempotent

  @req-retry-cancel
  Scenario: Cancelling the plan ends the wait between attempts at once
    Given a plan for retries
    And an idempotent tool that drops its connection and cancels its plan, waiting 60 seconds to retry
    When the host runs the flaky tool
    Then the call was cancelled while it waited to retry

  @req-retry-source
  Scenario: A source's retry settings reach its tools
    Given a plan for retries
    And a source of the flaky tool dropping its connection 2 times and a division tool, registered with 3 attempts and 2 retries
    When the host runs the flaky tool
    Then the result succeeds after 3 attempts
    When the model divides 1 by 0
    Then the answer is a retryable failure with 2 retry left
