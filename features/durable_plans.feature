Feature: Durable plans on DBOS
  A plan opened inside a DBOS workflow with durable=DBOSPlan() records each call
  as a step of the workflow. When the workflow runs again under its id, as after
  a crash, the calls that completed give back their recorded results without
  running, and the call that was running runs again only if its tool is
  idempotent; otherwise it is reported as interrupted. DBOSPlan.resume resumes a
  plan by its id, and a durable plan makes its calls one at a time.

  @req-durable-replay
  Scenario: Completed calls return their recorded results on resume
    Given DBOS is launched on SQLite
    And a durable plan "order-1" that quotes, then charges, then notifies
    When the plan is resumed from the notification
    Then the quote ran once and the charge ran once
    And the resumed plan got "charged 42" for the charge
    And the resumed plan's changes are "card/42"

  @req-durable-interrupted
  Scenario: The call that was running is reported interrupted when its tool is not idempotent
    Given DBOS is launched on SQLite
    And a durable plan "order-2" that quotes, then charges, then notifies
    When the plan is resumed from the charge
    Then the charge ran once
    And the resumed plan's charge failed with "ToolInterruptedError"

  @req-durable-interrupted
  Scenario: The call that was running runs again when its tool is idempotent
    Given DBOS is launched on SQLite
    And a durable plan "order-3" that quotes, then charges, then notifies
    When the plan is resumed from the notification
    Then the notification ran twice

  @req-durable-workflow
  Scenario: A durable plan needs a workflow to record in
    Given DBOS is launched on SQLite
    When a durable plan is opened outside any workflow
    Then opening it fails, naming "@DBOS.workflow()"

  @req-durable-crash
  Scenario: A plan killed with SIGKILL mid-plan resumes in another process
    Given a process running a durable plan killed with SIGKILL while "ship" runs
    When another process launches DBOS with the same application version
    Then the plan finished with "ship" reported as "ToolInterruptedError"
    And each tool body ran once

  @req-durable-resume
  Scenario: Another executor resumes a killed plan by its id, keeping its change and approval
    Given a process running a durable plan killed with SIGKILL while "ship" runs
    When a process of another DBOS executor resumes the plan by its id
    Then the plan finished with "ship" reported as "ToolInterruptedError"
    And each tool body ran once
    And the payment's approval and change were kept, and nobody was asked again

  @req-durable-one-call
  Scenario: A durable plan refuses a second call while one runs
    Given DBOS is launched on SQLite
    When a durable plan's second call starts while its first call runs
    Then the second call fails with "ConcurrentCallError"
    And only the first call was recorded
