Feature: pydantic-ai: toolcycle tools in an agent, and pydantic-ai toolsets in a plan
  A ToolcycleToolset gives each agent run a plan of its own and sends every
  call through the runtime; from_toolset makes a pydantic-ai toolset a source.
  The agent's model is pydantic-ai's FunctionModel, following a script.

  @req-pydantic-ai-run
  Scenario: A scripted run calls a tool twice and gets one call wrong
    Given a pydantic-ai agent with the runtime's tools "lookup" and "add"
    When the pydantic-ai model calls "lookup", then "add" right and "add" wrong
    Then the pydantic-ai run activated and deactivated "lookup" once, in one plan
    And the pydantic-ai run left 3 traces, the last one "invalid_input"
    And the pydantic-ai model was told what was wrong and asked to retry

  @req-pydantic-ai-read-only
  Scenario: A read-only plan hides a writing tool, and a call to it is a tool result
    Given a pydantic-ai agent with a read-only toolset of "add" and the writing "save"
    When the pydantic-ai model calls the hidden "save"
    Then the pydantic-ai model was shown only "add"
    And the pydantic-ai model got a retry prompt for "save", and the run finished

  @req-pydantic-ai-concurrent
  Scenario: Two concurrent runs keep separate plans
    Given a pydantic-ai agent whose tool waits for a second run
    When two pydantic-ai runs call it at the same time
    Then the two pydantic-ai calls ran in different plans

  @req-pydantic-ai-cancel
  Scenario: Cancelling a run stops the running tool before the plan ends
    Given a pydantic-ai agent whose tool runs until cancelled
    When the pydantic-ai run is cancelled while the tool runs
    Then the pydantic-ai tool stopped before it was deactivated

  @req-pydantic-ai-approval
  Scenario: An approval goes through pydantic-ai's deferred tools
    Given a pydantic-ai agent with a tool "pay" that needs approval
    When the pydantic-ai run asks to pay 30 and the caller approves it
    Then the pydantic-ai run paid 30 once, claimed in the approval ledger

  @req-pydantic-ai-source
  Scenario: A FunctionToolset runs under a read-only plan
    Given a pydantic-ai FunctionToolset with a read tool "greet" and a writing tool "delete"
    When a read-only plan calls the pydantic-ai tools: "greet" right, "greet" wrong and "delete"
    Then the pydantic-ai "greet" answered, its wrong call failed validation and "delete" was refused
