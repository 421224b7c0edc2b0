// Package oauth authorizes Snodo's Streamable HTTP transport with the OAuth 2.1
// client flow of the MCP specification.
//
// [NewTransport] wraps an [net/http.RoundTripper]. It sends the current access
// token as "Authorization: Bearer …" on requests to the MCP server and, when the
// server answers 401 Unauthorized (or 403 Forbidden with
// error="insufficient_scope"), it runs the authorization flow once for all
// concurrent requests and retries the request:
//
//  1. Protected Resource Metadata (RFC 9728): the resource_metadata URL from
//     the WWW-Authenticate challenge, else the path-based and then the root
//     well-known URI of the MCP server.
//  2. Authorization server metadata: RFC 8414 and OpenID Connect Discovery
//     URIs in the order the MCP specification lists; the document's issuer
//     must equal the authorization server identifier, and the server must
//     support PKCE with S256.
//  3. Client identity: pre-registered credentials ([Config.ClientID]), a
//     Client ID Metadata Document URL ([Config.ClientIDMetadataURL]) when the
//     server supports it, a registration stored for the same issuer, or
//     Dynamic Client Registration (RFC 7591).
//  4. Authorization code with PKCE S256, state and the RFC 8707 resource
//     parameter; the user's consent is obtained by an [Authorizer]
//     ([LoopbackAuthorizer] for a person at a browser, [HeadlessAuthorizer]
//     for servers that approve without a person). The RFC 9207 iss
//     parameter is checked before the code is sent anywhere.
//  5. Token exchange; tokens are kept in a [TokenStore] ([MemoryStore] by
//     default, [FileStore] for the command line) and refreshed when expired.
//
// Every document an authorization or resource server returns is hostile
// input: sizes are bounded ([MaxMetadataBytes]), endpoints must use https
// unless they are on a loopback address, and text from a server that appears
// in an error is truncated and escaped.
//
// See https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization
// and the 2026-07-28 revision's basic/authorization pages.
package oauth
