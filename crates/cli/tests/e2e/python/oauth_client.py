"""The Python MCP SDK's OAuth client against `nexo serve --auth-issuer`:
discovery from the 401, dynamic registration, PKCE, the authorization URL
followed here as a browser would (the test's authorization server approves
at once), the code traded for a token, then one tool call. Prints the
tool's text.

    python oauth_client.py http://127.0.0.1:PORT/mcp TOOL JSON_ARGUMENTS
"""

import asyncio
import json
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """Tokens and the registered client, kept for this run only."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client):
        self.client = client


async def main(url, tool, arguments):
    redirected = {}

    async def follow(authorization_url):
        # The browser's part: the authorization server redirects at once.
        async with httpx2.AsyncClient() as http:
            answer = await http.get(authorization_url)
        location = urlparse(answer.headers["location"])
        query = parse_qs(location.query)
        redirected["code"] = query["code"][0]
        redirected["state"] = query.get("state", [None])[0]
        redirected["iss"] = query.get("iss", [None])[0]

    async def callback():
        return AuthorizationCodeResult(**redirected)

    oauth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="python-sdk-oauth-test",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=Memory(),
        redirect_handler=follow,
        callback_handler=callback,
    )
    async with httpx2.AsyncClient(auth=oauth, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(tool, arguments)
                print(result.content[0].text)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
