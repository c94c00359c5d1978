Feature: JSON Schema validation
  Arguments are checked against the tool's input schema (draft 2020-12) before
  the tool runs; a failure is returned as a failed result that explains every
  problem. Output is checked against the output schema after the run; a
  mismatch is logged as a warning, or fails the call under strict_output.

  @req-validation-input-failure
  Scenario Outline: Arguments <arguments> are rejected at "<pointer>" by "<keyword>"
    Given a plan "p1"
    And a tool "count" that takes an integer "n" and nothing else
    When I call "count" with arguments <arguments>
    Then the call fails with error type "ToolSchemaValidationError"
    And the input was rejected at "<pointer>" by the keyword "<keyword>"
    And "count" never ran
    And the last trace has status "invalid_input"

    Examples:
      | arguments             | pointer | keyword              |
      | {"n": "three"}        | /n      | type                 |
      | {"n": 1, "extra": 2}  | (root)  | additionalProperties |
      | {}                    | (root)  | required             |

  @req-validation-input-failure
  Scenario: A rejected input is a result, not an exception
    Given a plan "p1"
    And a tool "count" that takes an integer "n"
    When I call "count" with arguments {"n": 1.5}
    Then no error was raised
    And the result explains the problem with "/n"

  @req-validation-input-not-object
  Scenario: Arguments that are not an object are rejected at the root
    Given a plan "p1"
    And a tool "count" that takes an integer "n"
    When I call "count" with a list instead of an object
    Then the call fails with error type "ToolSchemaValidationError"
    And the input was rejected at "(root)" by the keyword "type"
    And "count" never ran

  @req-validation-draft-2020-12
  Scenario: Draft 2020-12 keywords such as prefixItems are applied
    Given a plan "p1"
    And a tool "pair" whose input schema is {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}}
    When I call "pair" with arguments {"pair": ["a", "b"]}
    Then the input was rejected at "/pair/1" by the keyword "type"

  @req-validation-output-warning
  Scenario: Output that does not match the output schema is kept, flagged and logged
    Given a plan "p1"
    And the runtime's warnings are captured
    And a tool "shaped" with output schema {"type": "object", "properties": {"a": {"type": "integer"}}} that returns JSON {"a": "x"}
    When I call "shaped"
    Then the call succeeds with output {"a": "x"}
    And the last trace reports output_valid false
    And the last trace has status "ok"
    And a warning "tool.output_invalid" was logged for "shaped"

  @req-validation-strict-output
  Scenario: Under strict_output a mismatched output fails the call
    Given a runtime with strict output
    And a plan "p1"
    And a tool "shaped" with output schema {"type": "object", "properties": {"a": {"type": "integer"}}} that returns JSON {"a": "x"}
    When I call "shaped"
    Then the call fails with error type "ToolSchemaValidationError"
    And the last trace reports output_valid false
    And the last trace has status "error"

  @req-validation-strict-output
  Scenario: Under strict_output a matching output still succeeds
    Given a runtime with strict output
    And a plan "p1"
    And a tool "shaped" with output schema {"type": "object", "properties": {"a": {"type": "integer"}}} that returns JSON {"a": 1}
    When I call "shaped"
    Then the call succeeds with output {"a": 1}
    And the last trace reports output_valid true

  @req-validation-bad-schema
  Scenario: A tool whose schema is not a usable 2020-12 schema cannot be registered
    When I register a tool "bad" whose input schema is {"type": 5}
    Then the registration raises ToolSchemaValidationError
    And the schema error points at "/type"
    And the runtime does not list the tool "bad"

  @req-validation-offline
  Scenario: A schema reference is never fetched, only resolved from the given documents
    When I register a tool "remote" whose input schema is {"$ref": "https://example.com/shape.json"}
    Then the registration raises ToolSchemaValidationError
    And the error message mentions "never retrieved"

  @req-validation-offline
  Scenario: A schema reference resolves against documents handed to the runtime
    Given a runtime that knows the schema "https://example.com/shape.json" as {"type": "object", "required": ["a"]}
    And a plan "p1"
    And a tool "shaped" whose input schema is {"$ref": "https://example.com/shape.json"}
    When I call "shaped" with arguments {}
    Then the input was rejected at "(root)" by the keyword "required"

  @req-validation-safe-pattern
  Scenario: A pattern that would backtrack for ages on a backtracking engine is checked in linear time
    Given a plan "p1"
    And a tool "regex" whose input schema is {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|a)*$"}}}
    When I call "regex" with arguments {"s": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}
    Then the input was rejected at "/s" by the keyword "pattern"

  @req-validation-safe-pattern
  Scenario: A pattern the linear-time engine cannot run is refused, saying why
    When I register a tool "regex" whose input schema is {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a)\\1$"}}}
    Then the registration raises ToolSchemaValidationError
    And the error message mentions "backreference"

  @req-validation-backends
  Scenario: The fast validator is the default when it is installed
    Then the runtime validates with "jsonschema-rs"

  @req-validation-backends
  Scenario Outline: The <backend> validator rejects <arguments> at "<pointer>" by "<keyword>", in toolcycle's words
    Given a runtime that validates with "<backend>"
    And a plan "p1"
    And a tool "count" that takes an integer "n" and nothing else
    When I call "count" with arguments <arguments>
    Then the runtime validates with "<backend>"
    And the call fails with error type "ToolSchemaValidationError"
    And the input was rejected at "<pointer>" by the keyword "<keyword>"
    And the issue at "<pointer>" reads: <message>
    And "count" never ran

    Examples:
      | backend       | arguments            | pointer | keyword              | message                                   |
      | jsonschema    | {"n": "three"}       | /n      | type                 | expected integer, got string "three"      |
      | jsonschema-rs | {"n": "three"}       | /n      | type                 | expected integer, got string "three"      |
      | jsonschema    | {"n": 1, "extra": 2} | (root)  | additionalProperties | unexpected property "extra" is not allowed |
      | jsonschema-rs | {"n": 1, "extra": 2} | (root)  | additionalProperties | unexpected property "extra" is not allowed |
      | jsonschema    | {}                   | (root)  | required             | missing required property "n"             |
      | jsonschema-rs | {}                   | (root)  | required             | missing required property "n"             |

  @req-validation-backends
  Scenario Outline: An optional field given the wrong type says which types would do, on <backend>
    Given a runtime that validates with "<backend>"
    And a plan "p1"
    And a tool "page" whose input schema is {"type": "object", "properties": {"limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    When I call "page" with arguments {"limit": "5"}
    Then the call fails with error type "ToolSchemaValidationError"
    And the input was rejected at "/limit" by the keyword "anyOf"
    And the issue at "/limit" reads: expected integer or null, got string "5"

    Examples:
      | backend       |
      | jsonschema    |
      | jsonschema-rs |
