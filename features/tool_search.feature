Feature: Tool search and deferred loading
  A runtime with many tools sends the model only some of them. The others are
  deferred: the model finds them with a tool search (the provider's own, or
  toolcycle's search_tools), and each tool it finds is shown in full for the
  rest of the plan. Searching reads descriptions only; it never starts a tool.

  Background:
    Given a tool "lookup" that reads
    And a deferred tool "github_create_issue" described as "Create an issue in a GitHub repository."
    And a deferred tool "slack_post_message" described as "Post a message to a Slack channel."

  @req-search-definitions
  Scenario: A provider without native search gets the search_tools meta-tool instead
    Given a plan "p1"
    When I ask for the definitions in the "openai" format with search "auto"
    Then the definitions are "lookup, search_tools"
    And no definition says defer_loading

  @req-search-definitions
  Scenario Outline: A provider with native search gets its search tool and the flag
    Given a plan "p1"
    When I ask for the definitions in the "<format>" format with search "<search>"
    Then the first definition is the search entry <entry>
    And the deferred tools are sent with defer_loading true

    Examples:
      | format           | search | entry                                                                    |
      | anthropic        | auto   | {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"} |
      | anthropic        | regex  | {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"} |
      | openai-responses | hosted | {"type": "tool_search"}                                                  |

  @req-search-definitions
  Scenario: Asking for a native search the provider lacks is refused
    Given a plan "p1"
    When I ask for the definitions in the "gemini" format with search "native"
    Then asking was refused with ValueError mentioning "has no native tool search"

  @req-search-reveal
  Scenario: A search reveals the best tool for the rest of the plan, and its trace says so
    Given a plan "p1"
    When the model searches for "open a GitHub issue"
    Then the search answered with "github_create_issue" first
    And the last trace of "search_tools" revealed "github_create_issue"
    When I ask for the definitions in the "openai" format with search "auto"
    Then the definitions are "lookup, github_create_issue, search_tools"

  @req-search-reveal
  Scenario: A model that calls a deferred tool by name runs it and reveals it
    Given a plan "p1"
    When the model calls "slack_post_message" by name
    Then the call succeeded
    And the last trace of "slack_post_message" revealed "slack_post_message"
    When I ask for the definitions in the "openai" format with search "auto"
    Then the definitions are "lookup, slack_post_message, search_tools"
    When the model calls "slack_post_message" by name
    Then the last trace of "slack_post_message" revealed nothing

  @req-search-no-activation
  Scenario: Searching never activates a tool
    Given a deferred recording tool "fake_alpha"
    And a plan "p1"
    When the model searches for "fake alpha"
    Then the search answered with "fake_alpha" first
    And the recording tool "fake_alpha" was only discovered

  @req-search-failure-modes
  Scenario: A prefix every tool shares matches none of them, but real words find the tool
    Given 200 deferred tools named "mcp__x__<verb>_<thing>"
    And a plan "p1"
    When the model searches for "mcp"
    Then the search answered with no tool and a note mentioning "ignored 'mcp'"
    When the model searches for "mcp update an invoice"
    Then the search answered with "mcp__x__update_invoice" first

  @req-search-failure-modes
  Scenario: An unknown tool is refused without listing the catalogue
    Given a plan "p1"
    When the model calls "github_open_issue" by name
    Then the call failed without naming "github_create_issue, slack_post_message, lookup"
