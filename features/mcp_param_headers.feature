Feature: x-mcp-header arguments travel as Mcp-Param headers over HTTP
  A tool may mark an argument with x-mcp-header in its input schema. On a
  2026-07-28 connection over streamable HTTP the SDK copies that argument
  into an Mcp-Param-* request header, which the server checks before it
  runs the call.

  @req-mcp-param-headers
  Scenario: A region argument is sent as the Mcp-Param-Region header
    Given an MCP server over HTTP with a tool whose "region" argument is the header "Region"
    And I register the header server with protocol "auto"
    When the region "eu-west" goes to the header tool "where"
    Then the header tool answers "eu-west"
    And the server saw the header "mcp-param-region" with "eu-west"
