Feature: Guardrails: checks that let a call through, answer it with a refusal, or stop it
  Guardrails are functions of the call and the plan's context. Input guardrails
  see the validated arguments before the tool runs; output guardrails see its
  output before the result leaves the runtime. They are given per runtime, per
  source and per tool.

  @req-guardrail-reject @req-guardrail-trace
  Scenario: A rejected call answers the model and never runs the tool
    Given a runtime whose guardrail rejects deleting "/" with "the root is protected"
    When the model calls "delete" with path "/"
    Then the model's answer is a failure saying "the root is protected"
    And nothing was deleted
    And the trace says "rejected" with the decisions "input:protect_root:reject"

  @req-guardrail-stop
  Scenario: A stop raises for the host, even from a model's call
    Given a runtime whose guardrail stops every call of "delete"
    When the model calls "delete" with path "/tmp/x" and the host catches the error
    Then the host caught GuardrailTripped from guardrail "freeze"
    And nothing was deleted

  @req-guardrail-output @req-guardrail-trace
  Scenario: An output guardrail keeps a secret from the model
    Given a tool "read" whose output guardrail rejects outputs holding "password"
    When the plan reads "config"
    Then the read failed with "the output held a password"
    And the trace says "rejected" with the decisions "output:no_passwords:reject"

  @req-guardrail-order
  Scenario: The runtime's guardrail runs first, and a rejection stops the others
    Given a runtime whose guardrail rejects deleting "/" with "the root is protected"
    And the tool "delete" also has its own guardrail
    When the model calls "delete" with path "/"
    Then the tool's own guardrail never ran

  @req-guardrail-order
  Scenario: Input guardrails run before the approver, or after it when asked
    Given a plan whose approver approves and a guardrail that notes when it runs
    When the plan deletes "/tmp/x"
    Then the guardrail ran before the approver
    Given a plan whose approver approves and a guardrail after approval that notes when it runs
    When the plan deletes "/tmp/x"
    Then the guardrail ran after the approver
