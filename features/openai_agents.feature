Feature: The OpenAI Agents SDK: toolcycle's tools in an SDK agent, and the SDK's tools in toolcycle
  function_tools(runtime, plan) offers the tools a plan may run as the SDK's
  function tools; every call goes through the runtime. from_function_tool turns
  an SDK function tool into a toolcycle tool. The model is the SDK's own
  ScriptedModel, so no scenario calls a provider.

  @req-openai-agents-run
  Scenario: A scripted SDK run looks up twice, gets one lookup wrong and retries
    Given an OpenAI Agents plan with the lookup tool
    When the SDK agent looks up "a", then 7, then "b"
    Then the OpenAI Agents lookup was activated once and deactivated once
    And the OpenAI Agents plan traced 3 calls, one with invalid input
    And the SDK model read the runtime's message about "key" before it retried

  @req-openai-agents-sync-run
  Scenario: Runner.run_sync calls a sync and an async tool under a sync plan
    Given an OpenAI Agents plan with the lookup tool and the async tool "echo"
    When Runner.run_sync runs the SDK agent, which calls "lookup" and "echo", in runtime.plan()
    Then the SDK model read "A" from "lookup" and "hi" from "echo"
    And each SDK call was traced with the SDK's call id
    And the OpenAI Agents lookup was activated once and deactivated once

  @req-openai-agents-read-only
  Scenario: A read-only plan hides the writing tool, and the SDK answers a call to it
    Given an OpenAI Agents read-only plan with the lookup tool and the writing tool "erase"
    When the SDK agent calls "erase" anyway
    Then the SDK agent was offered only "lookup"
    And the SDK model read an answer mentioning "erase"
    And the OpenAI Agents tool "erase" never ran

  @req-openai-agents-approval
  Scenario: The SDK asks before a write, and the approved call runs once
    Given an OpenAI Agents plan with an approver and the writing tool "send"
    When the SDK agent calls "send" and the run stops for approval
    And the host approves the interrupted call in the run state and resumes twice
    Then the OpenAI Agents tool "send" ran once
    And its trace says the call was approved and resumed
    And the second resume was answered with "resumed before"

  @req-openai-agents-reverse
  Scenario: An SDK function tool runs under a toolcycle plan
    Given the SDK function tool "add" registered with toolcycle
    When a toolcycle plan runs "add" with 2 and 3, and with "two" and 3
    Then the first call returned 5 and the second was refused as invalid input
    And a read-only plan refuses "add", which is taken to write
