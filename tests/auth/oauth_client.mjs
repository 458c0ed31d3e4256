// The official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// package.json) as an OAuth client of `toolhost serve --http`, for
// tests/all/auth/oauth_flow.rs. Usage:
//
//   node oauth_client.mjs URL TOOL ARGUMENTS_JSON [--resource URI]
//
// URL is the server's `/mcp` endpoint. The SDK does the whole flow itself:
// the server's 401, Protected Resource Metadata (RFC 9728), the
// authorization server's metadata, dynamic client registration (RFC 7591),
// the authorization request with PKCE and `resource` (RFC 8707), and the
// token exchange. This script is only the SDK's `OAuthClientProvider`: it
// keeps the client, its tokens and the code verifier in memory, and its
// "browser" follows the authorization URL's redirects (tests/auth/server.mjs
// logs in and consents without a page) until they reach the redirect URI,
// whose `code` it hands to `transport.finishAuth`. Then it connects again,
// lists the tools and calls TOOL with ARGUMENTS_JSON.
//
// `--resource URI` makes the provider ask for a token for URI instead of
// the resource the server's metadata names (the SDK's
// `validateResourceURL` hook): a token the server must refuse.
//
// It prints one JSON line, whether the flow succeeded or not: `ok`, the
// HTTP exchanges (`requests`: method, URL, status, whether a bearer token
// was sent, the challenge, the form or registration fields without
// secrets), the registered `client_id`, the PKCE evidence, the access
// token's claims (never the token), the tools and the call's result; and
// on failure `error`. Exit status 0 only when the tool was called.
import crypto from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const argv = process.argv.slice(2);
let resourceOverride;
const at = argv.indexOf('--resource');
if (at >= 0) {
  resourceOverride = argv[at + 1];
  argv.splice(at, 2);
}
const [serverUrl, tool, argumentsJson = '{}'] = argv;
if (!serverUrl || !tool || (at >= 0 && !resourceOverride)) {
  console.error('usage: node oauth_client.mjs URL TOOL ARGUMENTS_JSON [--resource URI]');
  process.exit(2);
}
const toolArguments = JSON.parse(argumentsJson);

const report = { ok: false, server: serverUrl, requests: [] };
const REDIRECT_URI = 'http://127.0.0.1/oauth/callback';

function finish(code, error) {
  if (error) {
    report.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    console.error(`oauth_client.mjs: ${report.error}`);
  }
  process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(code));
}
setTimeout(() => finish(3, new Error('timed out after 60 s')), 60_000);

const b64url = (bytes) => Buffer.from(bytes).toString('base64url');
const claimsOf = (jwt) => {
  try {
    return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
  } catch {
    return null; // opaque
  }
};

// Form fields worth seeing (never a secret's value).
function formFields(body) {
  if (body == null) return undefined;
  let params;
  if (body instanceof URLSearchParams) params = body;
  else if (typeof body === 'string' && !body.trimStart().startsWith('{')) params = new URLSearchParams(body);
  if (params) {
    const seen = {};
    for (const [key, value] of params) {
      seen[key] = ['grant_type', 'resource', 'redirect_uri', 'client_id', 'scope'].includes(key)
        ? value
        : '(present)';
    }
    return seen;
  }
  if (typeof body === 'string') {
    try {
      return JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

// Every HTTP exchange of the SDK (and of the "browser"), recorded.
async function loggedFetch(input, init = {}) {
  const url = typeof input === 'string' ? input : (input.href ?? input.url);
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  const entry = {
    method: init.method ?? (input instanceof Request ? input.method : 'GET'),
    url,
    bearer: /^bearer /i.test(headers.get('authorization') ?? ''),
  };
  const fields = formFields(init.body);
  if (fields) entry.body = fields;
  report.requests.push(entry);
  const response = await fetch(input, init);
  entry.status = response.status;
  const challenge = response.headers.get('www-authenticate');
  if (challenge) entry.www_authenticate = challenge;
  return response;
}

// The user agent: follows redirects from the authorization URL, keeping
// cookies, until one goes to the redirect URI.
async function browse(authorizationUrl) {
  const jar = new Map();
  let next = new URL(authorizationUrl);
  for (let hop = 0; hop < 20; hop++) {
    if (next.href.startsWith(REDIRECT_URI)) return next;
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await loggedFetch(next.href, {
      redirect: 'manual',
      headers: cookie ? { cookie } : {},
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a));
      if (expired || !value) jar.delete(name);
      else jar.set(name, value);
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) {
      const body = (await response.text()).slice(0, 500);
      throw new Error(`the authorization stopped at ${next.href}: ${response.status} ${body}`);
    }
    await response.body?.cancel();
    next = new URL(location, next);
  }
  throw new Error('the authorization did not reach the redirect URI in 20 redirects');
}

class MemoryOAuthProvider {
  constructor() {
    this.client = undefined;
    this.savedTokens = undefined;
    this.verifier = undefined;
    this.expectedState = undefined;
    this.codes = [];
    if (resourceOverride) {
      // Ask for a token for another resource than the metadata's.
      this.validateResourceURL = async () => new URL(resourceOverride);
    }
  }

  get redirectUrl() {
    return REDIRECT_URI;
  }

  get clientMetadata() {
    return {
      client_name: 'toolhost oauth_client.mjs',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    this.expectedState = b64url(crypto.randomBytes(16));
    return this.expectedState;
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(information) {
    this.client = information;
    report.client_id = information.client_id;
  }

  tokens() {
    return this.savedTokens;
  }

  saveTokens(tokens) {
    this.savedTokens = tokens;
    report.token = {
      token_type: tokens.token_type,
      refresh_token: !!tokens.refresh_token,
      scope: tokens.scope,
      claims: claimsOf(tokens.access_token),
    };
  }

  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }

  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }

  async redirectToAuthorization(authorizationUrl) {
    const url = new URL(authorizationUrl);
    const challenge = url.searchParams.get('code_challenge');
    report.authorization = {
      endpoint: `${url.origin}${url.pathname}`,
      response_type: url.searchParams.get('response_type'),
      client_id: url.searchParams.get('client_id'),
      scope: url.searchParams.get('scope'),
      resource: url.searchParams.get('resource'),
      code_challenge_method: url.searchParams.get('code_challenge_method'),
    };
    report.pkce = {
      method: url.searchParams.get('code_challenge_method'),
      challenge_matches_verifier:
        !!challenge &&
        !!this.verifier &&
        b64url(crypto.createHash('sha256').update(this.verifier).digest()) === challenge,
    };
    const back = await browse(url);
    const error = back.searchParams.get('error');
    if (error) {
      throw new Error(`the authorization server answered ${error}: ${back.searchParams.get('error_description')}`);
    }
    if (back.searchParams.get('state') !== this.expectedState) {
      throw new Error('the redirect came back with another state');
    }
    report.authorization.iss = back.searchParams.get('iss');
    this.codes.push(back.searchParams.get('code'));
  }
}

const provider = new MemoryOAuthProvider();

function session() {
  const client = new Client({ name: 'toolhost-oauth-client', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl), {
    authProvider: provider,
    fetch: loggedFetch,
  });
  return { client, transport };
}

// What the server answered the last request that carried a token.
function lastRefusal() {
  const last = report.requests.filter((r) => r.bearer && r.url.startsWith(serverUrl)).at(-1);
  return last && last.status >= 400
    ? ` (the server answered the access token with ${last.status}: ${last.www_authenticate ?? 'no challenge'})`
    : '';
}

try {
  // First: no token, so the server's 401 starts the SDK's flow, which ends
  // in redirectToAuthorization.
  const first = session();
  try {
    await first.client.connect(first.transport);
    await first.client.close();
    throw new Error('the server answered without asking for a token');
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const code = provider.codes.at(-1);
  if (!code) throw new Error('the SDK gave up before the authorization request');
  report.pkce.verifier_sent = false;
  await first.transport.finishAuth(code);
  report.pkce.verifier_sent = report.requests.some((r) => r.body?.code_verifier === '(present)');

  // Then with the token.
  const second = session();
  try {
    await second.client.connect(second.transport);
  } catch (error) {
    throw new Error(`connecting with the access token failed: ${error.message}${lastRefusal()}`);
  }
  const { tools } = await second.client.listTools();
  report.tools = tools.map((t) => t.name);
  report.call = await second.client.callTool({ name: tool, arguments: toolArguments });
  report.protocol_version = second.transport.protocolVersion;
  await second.client.close();
  report.ok = true;
  finish(0);
} catch (error) {
  finish(1, error);
}
