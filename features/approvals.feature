Feature: Approvals: a person (or a policy) says yes before a tool that writes runs
  A plan can carry an approver. It is asked before every call that needs
  approval, and its answer is bound to that one call: approve, deny with a
  reason the model reads, or defer until later, even in another process.

  @req-approval-ask
  Scenario: Only calls of tools that write are put to the approver by default
    Given an approval plan whose approver approves everything
    When the plan looks up "weather" and sends "hello" to "ann"
    Then the approver was asked about "send" only
    And the trace of the send says it was approved

  @req-approval-deny
  Scenario: A denied call is a failed result with the approver's reason, and nothing ran
    Given an approval plan whose approver denies with "sending is paused"
    When the plan sends "hello" to "ann"
    Then the send failed with "sending is paused"
    And nothing was sent

  @req-approval-defer
  Scenario: A deferred call is resumed later, in a new plan, and runs exactly once
    Given an approval plan whose approver defers every call
    When the plan sends "hello" to "ann"
    And the pending call is stored as JSON
    And a new plan resumes the stored call with an approval bound to its fingerprint
    Then "hello" was sent to "ann" once
    And resuming the stored call again is refused as resumed before

  @req-approval-fingerprint
  Scenario: An approval given for one call cannot be applied to another
    Given an approval plan whose approver defers every call
    When the plan sends "hello" to "ann"
    And the plan sends "wire the money" to "mallory"
    And a new plan resumes the second call with the approval of the first
    Then the resume is refused as bound to another call
    And nothing was sent
