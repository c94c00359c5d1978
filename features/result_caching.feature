Feature: Result caching: a read-only tool's results answered again without running it
  A tool that does not write may opt in with a CachePolicy. An equal call (the
  same validated input) within the policy's time to live is answered from the
  cache: the plan's checks still apply, but the tool is neither activated nor
  run, and the trace says cache_hit.

  @req-result-cache-hit
  Scenario: An equal call in the same plan is answered from the cache
    Given a cached weather tool with a time to live of 60 seconds
    When a plan asks the weather in "Oslo" twice
    Then the weather tool ran once
    And both answers say "rain in Oslo"
    And the second trace is marked as a cache hit

  @req-result-cache-hit
  Scenario: A hit in a plan that never used the tool does not activate it
    Given a cached weather tool shared across plans
    When a plan asks the weather in "Oslo" twice
    And a new plan asks the weather in "Oslo"
    Then the weather tool ran once
    And the weather tool was activated once

  @req-result-cache-plan-scope
  Scenario: A plan's cached results are not shared and are dropped when it ends
    Given a cached weather tool with a time to live of 60 seconds
    When a plan asks the weather in "Oslo" twice
    And a new plan asks the weather in "Oslo"
    Then the weather tool ran 2 times
    And the result cache is empty once every plan has ended

  @req-result-cache-writes-refused
  Scenario: A tool that writes cannot be registered with a cache
    When a tool that writes is registered with a cache policy
    Then the registration is refused with "writes=False if the tool only reads"

  @req-result-cache-checks
  Scenario: A hit still needs the approver's yes
    Given a cached weather tool that needs approval
    When a plan whose approver says yes, then no, asks the weather in "Oslo" twice
    Then the weather tool ran once
    And the second answer is denied

  @req-result-cache-model-call
  Scenario: A model's tool call is answered from the cache too
    Given a cached weather tool with a time to live of 60 seconds
    When a plan asks the weather in "Oslo" and the model calls it with the same input
    Then the weather tool ran once
    And the model's answer quotes its call id and is marked as a cache hit
