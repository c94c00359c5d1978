Feature: Built-in workspace tools, checkpoints and rollback
  The built-ins act only inside the workspace a plan binds, and a checkpoint
  plan can undo what they wrote, byte for byte.

  Background:
    Given a workspace holding
      | path          | content          |
      | README.txt    | Plans end.\n     |
      | src/main.py   | print('hi')\n    |

  @req-builtin-read
  Scenario: Read tools read, list and search inside the workspace
    Given a read-only plan "p" bound to the workspace
    When I call "read_file" with arguments {"path": "README.txt"}
    Then the call output has content "Plans end.\n"
    When I call "list_dir" with arguments {"recursive": true}
    Then the call output lists the entries "README.txt, src, src/main.py"

  @req-builtin-write
  Scenario: Write tools change files and record each change
    Given a writing plan "p" bound to the workspace
    When I call "write_file" with arguments {"path": "notes/todo.txt", "content": "docs"}
    And I call "edit_file" with arguments {"path": "README.txt", "old": "end", "new": "roll back"}
    Then file "notes/todo.txt" contains "docs"
    And file "README.txt" contains "Plans roll back.\n"
    And every change records the tool that made it and when

  @req-builtin-read-only
  Scenario: A read-only plan refuses the write tools
    Given a read-only plan "p" bound to the workspace
    When I call "write_file" with arguments {"path": "x.txt", "content": "x"}
    Then the call raises ToolAccessDeniedError

  @req-builtin-read-only
  Scenario: A workspace bound read-only refuses writes even in a writing plan
    Given a plan "p" bound to the workspace read-only
    When I call "delete_file" with arguments {"path": "README.txt"}
    Then the call fails with error type "WorkspaceReadOnlyError"
    And file "README.txt" contains "Plans end.\n"

  @req-builtin-path-escape
  Scenario Outline: Paths that leave the workspace are refused
    Given a symlink "outside" in the workspace pointing outside it
    And a writing plan "p" bound to the workspace
    When I call "read_file" with arguments {"path": "<path>"}
    Then the call fails with error type "PathOutsideWorkspaceError"

    Examples:
      | path             |
      | ../secret.txt    |
      | /etc/hostname    |
      | src/../../x.txt  |
      | outside/anything |

  @req-rollback
  Scenario: Rolling back to a checkpoint restores the workspace byte for byte
    Given a checkpoint plan "p" bound to the workspace
    When I take a checkpoint
    And I call "write_file" with arguments {"path": "new/file.txt", "content": "new"}
    And I call "edit_file" with arguments {"path": "README.txt", "old": "end", "new": "go"}
    And I call "delete_file" with arguments {"path": "src/main.py"}
    And I call "make_dir" with arguments {"path": "empty/dir"}
    And I roll back to the checkpoint
    Then the workspace is exactly as it was at the checkpoint

  @req-rollback-conflict
  Scenario: A file changed by someone else after the tool is not overwritten
    Given a checkpoint plan "p" bound to the workspace
    When I take a checkpoint
    And I call "write_file" with arguments {"path": "README.txt", "content": "by the tool"}
    And someone else writes "by a person" to "README.txt"
    And I roll back to the checkpoint
    Then the rollback reports a conflict on "README.txt" and leaves it alone
    And file "README.txt" contains "by a person"
    And the plan still records the change to "README.txt"

  @req-rollback-checkpoint-rule
  Scenario: A checkpoint plan still refuses tools that cannot be rolled back
    Given a tool "mailer" with writes true and checkpointable false
    And a checkpoint plan "p" bound to the workspace
    When I call "mailer"
    Then the call raises ToolCheckpointRequiredError
