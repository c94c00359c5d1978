Feature: Agent Skills as a tool source
  A folder of skills registered with register_source lends the runtime one
  read-only tool per valid skill. Discovery reads only each skill's front
  matter; activating a skill in a plan loads its instructions once; a call
  returns the instructions or one bundled file; an invalid skill is reported
  without stopping the others; and scripts run only when enabled, never
  outliving their call.

  Background:
    Given a skills folder with the skills "pdf-tools" and "charts"

  @req-skills-discover
  Scenario: Registering a skills folder makes each skill a read-only tool
    When I register the skills folder
    Then the registered tools are "charts, pdf-tools"
    And the tool "pdf-tools" comes from skill "pdf-tools" and does not write
    And the description of "pdf-tools" is the one in its front matter

  @req-skills-report
  Scenario: An invalid skill is reported and the others register
    Given a skill folder "Broken_One" whose front matter is:
      """
      name: Broken_One
      description: Breaks two rules.
      """
    When I register the skills folder
    Then the registered tools are "charts, pdf-tools"
    And the skill "Broken_One" was reported for breaking "name-lowercase"
    And the skill "Broken_One" was reported for breaking "name-characters"
    And the registration warned about "Broken_One" with the hint "use only letters, digits and hyphens"

  @req-skills-report
  Scenario: A strict skills folder refuses to register when a skill is invalid
    Given a skill folder "no-description" whose front matter is:
      """
      name: no-description
      """
    When I register the skills folder strictly
    Then registering fails with SkillValidationError naming "description-missing"
    And no tool is registered

  @req-skills-activation
  Scenario: A plan loads a skill's instructions once
    Given I register the skills folder
    And a read-only plan "p1"
    When I call "pdf-tools"
    And the instructions of "pdf-tools" are changed to "New steps."
    And I call "pdf-tools" again
    Then both calls returned the instructions "Steps for pdf-tools."
    When plan "p1" ends
    And a new plan "p2" calls "pdf-tools"
    Then the call returned the instructions "New steps."

  @req-skills-files
  Scenario: A bundled file is read when a call asks for it
    Given the skill "pdf-tools" bundles "references/forms.md" with the text "Fill the form."
    And I register the skills folder
    And a read-only plan "p1"
    When I call "pdf-tools"
    Then the instructions list the files "references/forms.md"
    When I call "pdf-tools" with arguments {"path": "references/forms.md"}
    Then the call succeeds with output {"path": "references/forms.md", "text": "Fill the form."}

  @req-skills-files
  Scenario Outline: Paths that leave the skill's folder are refused
    Given a file outside the skills folder, linked from "pdf-tools" as "escape.md"
    And I register the skills folder
    And a plan "p1"
    When I call "pdf-tools" with arguments {"path": "<path>"}
    Then the call fails with error type "SkillFileError"
    And the outside file's text is not in the result

    Examples:
      | path             |
      | ../charts/SKILL.md |
      | /etc/hostname    |
      | escape.md        |

  @req-skills-scripts
  Scenario: Scripts run only when the source enables them
    Given the skill "charts" has a script "scripts/plot.py" that prints "plotted"
    When I register the skills folder
    Then the registered tools are "charts, pdf-tools"
    When I register the skills folder with scripts enabled in a new runtime
    Then the registered tools are "charts, charts.run_script, pdf-tools"
    And the tool "charts.run_script" writes and is not checkpointable

  @req-skills-scripts
  Scenario: A script's output comes back from run_script
    Given the skill "charts" has a script "scripts/plot.py" that prints "plotted"
    And I register the skills folder with scripts enabled
    And a plan "p1"
    When I call "charts.run_script" with arguments {"script": "scripts/plot.py"}
    Then the script printed "plotted" and exited with 0

  @req-skills-scripts
  Scenario: A cancelled script leaves no process behind
    Given the skill "charts" has a script "scripts/hang.py" that hangs after starting a child
    And I register the skills folder with scripts enabled
    And a plan "p1"
    When I run "scripts/hang.py" of "charts" and cancel the plan once it has started
    Then the call raises ToolCancelledError
    And no process the script started is running

  @req-skills-scripts
  Scenario: A script that runs too long times out and leaves no process behind
    Given the skill "charts" has a script "scripts/hang.py" that hangs after starting a child
    And I register the skills folder with scripts enabled
    And a plan "p1"
    When I run "scripts/hang.py" of "charts" with a timeout of 0.5 seconds
    Then the call timed out
    And no process the script started is running

  @req-skills-prompt
  Scenario: The prompt block lists the valid skills for the system prompt
    Given a skill folder "Broken_One" whose front matter is:
      """
      name: Broken_One
      description: Breaks two rules.
      """
    When I render the prompt block of the skills folder
    Then the prompt block lists the skills "charts, pdf-tools" with their SKILL.md locations
