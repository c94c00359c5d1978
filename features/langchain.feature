Feature: LangChain and LangGraph: toolcycle tools in a graph, LangChain tools under a plan
  toolcycle's tools become LangChain tools that a LangGraph ToolNode runs through
  the runtime, so plans, validation, traces and approvals hold; a deferred approval
  pauses the graph with interrupt() and Command(resume=...) finishes the call. A
  LangChain tool becomes a toolcycle tool under the runtime's plans.

  @req-langchain-agent
  Scenario: A LangGraph agent runs toolcycle tools and its model retries after a mistake
    Given a LangChain test runtime with a reading tool "lookup" and a writing tool "save"
    When a LangGraph agent in a read-only plan calls "lookup" with a number, then with "oslo"
    Then the LangChain model was offered only "lookup"
    And the LangGraph run answered "c1" with an error about "/key"
    And the LangGraph run answered "c2" with "OSLO"
    And the LangChain traces are "invalid_input, ok"
    And the LangChain plan activated "lookup" once and deactivated it once

  @req-langchain-approval
  Scenario: A deferred call pauses the graph, and resuming with an approval runs it once
    Given a LangChain test runtime with a writing tool "send" and an approver that defers
    When a LangGraph agent calls "send" for "ann" and pauses
    Then the LangGraph interrupt asks about "send" with the arguments of the call
    When the LangGraph agent is resumed with an approval of that fingerprint
    Then the LangChain tool "send" ran once for "ann" and the LangGraph run answered "t1" with "sent to ann"
    And the last LangChain trace says the call was resumed

  @req-langchain-reverse
  Scenario: A LangChain tool runs under a plan with capabilities, validation and traces
    Given a LangChain tool "word_count" registered as reading and as "count_and_log" by default
    When the LangChain tools are called in a read-only plan
    Then the LangChain tool "word_count" counted 3 words, a bad call was invalid and "count_and_log" was denied
    And the LangChain traces are "ok, invalid_input, denied"
