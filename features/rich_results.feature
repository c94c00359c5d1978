Feature: Rich results
  A tool may return content parts (text, images, audio, files, resource links)
  or a ToolReturn that keeps three audiences apart: the value goes to the host,
  the content to the model, and the metadata to neither. Each provider format
  gets the content in the messages it can take.

  @req-rich-split
  Scenario: A ToolReturn gives the value to the host and the content to the model
    Given a plan "p1"
    And a chart tool that returns a value, a text, a PNG image and metadata
    When the model calls the chart tool with id "call_7"
    Then the host gets the value and the metadata
    And the trace records the content kinds "text, image" but not the metadata

  @req-rich-messages
  Scenario Outline: Each provider gets the image where it can take it
    Given a plan "p1"
    And a chart tool that returns a value, a text, a PNG image and metadata
    When the model calls the chart tool with id "call_7"
    Then the "<format>" messages are <count> and the image is a "<where>"

    Examples:
      | format           | count | where       |
      | openai           | 2     | image_url   |
      | openai-responses | 1     | input_image |
      | anthropic        | 1     | image       |
      | gemini           | 1     | inlineData  |
      | mcp              | 1     | image       |

  @req-rich-messages
  Scenario: One message is refused where the provider needs two
    Given a plan "p1"
    And a chart tool that returns a value, a text, a PNG image and metadata
    When the model calls the chart tool with id "call_7"
    Then asking for one "openai" message raises an error naming to_messages

  @req-rich-caps
  Scenario: The result-size cap counts every part and says what it left out
    Given a runtime whose results are capped at 600 bytes
    And a plan "p1"
    And a tool that returns a 400-byte text and a 400-byte image
    When I run the parts tool
    Then the result is truncated and the image is left out with a marker saying so
