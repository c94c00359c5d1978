Feature: MCP servers over HTTP with credentials
  A remote MCP server may require a token. Each plan can present its own
  credentials on its own connection, so that two users never share a token;
  a token that expires mid-plan is replaced once by asking for fresh
  credentials, and a second refusal fails the call, naming the server and
  showing no token.

  @req-mcp-auth-plans
  Scenario: Two users' plans are two identities to the server
    Given an MCP server over HTTP that requires a bearer token
    And the tokens "alice-token" for "alice" and "bob-token" for "bob"
    And I register that server with per-plan credentials from the plan's user
    When "alice" and "bob" each ask the server who they are in their own plans
    Then the server answered "alice" to alice and "bob" to bob
    And the two plans used two connections

  @req-mcp-auth-refresh
  Scenario: A token that expires mid-plan is refreshed once, then the call fails
    Given an MCP server over HTTP that requires a bearer token
    And the tokens "carol-token" for "carol" and "carol-token-2" for "carol"
    And I register that server with per-plan credentials from the plan's user
    And a plan of "carol"
    When the token "carol-token" expires and the next call asks for a fresh one
    Then the server still answers "carol"
    When the token "carol-token-2" expires too and no fresh one comes
    Then the call fails with McpAuthError naming the server "guarded"
    And the error shows no token
