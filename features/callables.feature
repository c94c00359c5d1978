Feature: Python functions as tools
  A decorated function becomes a tool whose schemas come from its signature,
  its docstring and its return annotation.

  @req-fn-schema
  Scenario: The signature and a Google docstring give the schema and the descriptions
    Given the function tool "convert"
    Then the description of "convert" is "Convert a temperature reading."
    And the input schema of "convert" requires "reading", "to"
    And property "reading" of "convert" is described as "the reading to convert."
    And "convert" has an output schema with the $defs "Unit"

  @req-fn-schema
  Scenario: Field constraints and NumPy docstrings are honoured
    Given the function tool "repeat"
    Then the input schema of "repeat" requires "text"
    And property "times" of "repeat" allows 1 to 3
    And property "times" of "repeat" is described as "how often."

  @req-fn-coercion
  Scenario: Arguments are validated, then coerced into the annotated types
    Given the function tool "convert"
    And a plan "p"
    When I call "convert" with arguments {"reading": {"value": 100}, "to": "fahrenheit"}
    Then the call succeeds with output {"value": 212.0, "unit": "fahrenheit"}

  @req-fn-coercion
  Scenario: Arguments outside the constraints never reach the function
    Given the function tool "repeat"
    And a plan "p"
    When I call "repeat" with arguments {"text": "ab", "times": 5}
    Then the input was rejected at "/times" by the keyword "maximum"

  @req-fn-injection
  Scenario: The context and the token are injected and hidden from the schema
    Given the function tool "whoami"
    And a plan "p"
    When I call "whoami" with arguments {"label": "x"}
    Then the input schema of "whoami" lists only "label"
    And the output equals {"label": "x", "cancelled": false} with the plan id filled in

  @req-fn-async
  Scenario: An async function runs through the sync execute
    Given the function tool "shout"
    And a plan "p"
    When I call "shout" with arguments {"text": "hi"}
    Then the call succeeds with output "HI"

  @req-fn-bad-definitions
  Scenario Outline: Functions that cannot be described fail when decorated
    When I decorate a function that takes <kind>
    Then the decoration fails saying "<text>"

    Examples:
      | kind            | text              |
      | *args           | *values           |
      | **kwargs        | **options         |
      | positional-only | positional-only   |
      | opaque          | not JSON-compatible |
