// A real OAuth 2.1 authorization server (oidc-provider) on loopback, for
// tests/all/auth.rs. Usage: node server.mjs RESOURCE [OTHER_RESOURCE]
//
// It prints one JSON line, {"issuer": ..., "jwks_uri": ..., "token_endpoint": ...},
// then serves until killed. Clients (client_credentials, secret in the
// request body): `alice` (scope "tools") and `bob` (scope "tools"); `rs`
// (secret by HTTP Basic) is the resource server's, to introspect tokens.
// Access tokens for RESOURCE (or OTHER_RESOURCE) are JWTs (ES256) with
// `aud` = the resource. GET /forge?kind=K answers a bad token made
// with jose, for the refusal tests: expired, wrong-issuer, unknown-key,
// none, hs256 (HMAC keyed with the public JWK's JSON).
//
// For a real OAuth client (authorization code + PKCE): open dynamic client
// registration (POST /reg), and an interaction (GET /interaction/UID) that
// logs in a fixed account (`user-1`) and grants what was asked without a
// page, so a client's "browser" only follows redirects from /auth to its
// redirect_uri with `code` (PKCE S256, which oidc-provider requires of
// public clients). Its tokens are JWTs for the `resource` asked, as above.
import http from 'node:http';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const [resource, other = 'https://other.example/mcp'] = process.argv.slice(2);
if (!resource) {
  console.error('usage: node server.mjs RESOURCE [OTHER_RESOURCE]');
  process.exit(2);
}

const { privateKey, publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
const privateJwk = { ...(await jose.exportJWK(privateKey)), kid: 'as-1', alg: 'ES256', use: 'sig' };
const publicJwk = { ...(await jose.exportJWK(publicKey)), kid: 'as-1', alg: 'ES256', use: 'sig' };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const clients = ['alice', 'bob', 'carol'].map((id) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_post',
  id_token_signed_response_alg: 'ES256',
  scope: 'tools',
}));
// The resource server's own client, for token introspection (RFC 7662):
// HTTP Basic client authentication, as RFC 7662 shows it.
clients.push({
  client_id: 'rs',
  client_secret: 'rs-secret',
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_basic',
  id_token_signed_response_alg: 'ES256',
  scope: 'tools',
});
// ACCESS_TOKEN_FORMAT=opaque: access tokens are opaque strings, which only
// introspection can check (default: JWTs).
const accessTokenFormat = process.env.ACCESS_TOKEN_FORMAT === 'opaque' ? 'opaque' : 'jwt';

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [privateJwk] },
  scopes: ['tools'],
  // Registered clients (POST /reg): ES256 ID tokens, the one key there is.
  clientDefaults: {
    grant_types: ['authorization_code'],
    id_token_signed_response_alg: 'ES256',
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  },
  findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  // A refresh token for a client registered for them, as MCP clients are.
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, indicator) {
        if (indicator !== resource && indicator !== other) {
          throw new Provider.errors.InvalidTarget();
        }
        return {
          scope: 'tools',
          audience: indicator,
          accessTokenTTL: 300,
          accessTokenFormat,
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

const now = () => Math.floor(Date.now() / 1000);
const claims = (extra = {}) => ({
  iss: issuer,
  aud: resource,
  sub: 'alice',
  client_id: 'alice',
  scope: 'tools',
  iat: now(),
  exp: now() + 300,
  jti: crypto.randomUUID(),
  ...extra,
});
const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');

async function forge(kind) {
  const header = { alg: 'ES256', kid: 'as-1', typ: 'at+jwt' };
  switch (kind) {
    case 'good':
      return new jose.SignJWT(claims()).setProtectedHeader(header).sign(privateKey);
    case 'expired':
      return new jose.SignJWT(claims({ iat: now() - 7200, exp: now() - 3600 }))
        .setProtectedHeader(header).sign(privateKey);
    case 'wrong-issuer':
      return new jose.SignJWT(claims({ iss: 'http://evil.example' }))
        .setProtectedHeader(header).sign(privateKey);
    case 'unknown-key': {
      const stranger = await jose.generateKeyPair('ES256');
      return new jose.SignJWT(claims()).setProtectedHeader({ ...header, kid: 'stranger' })
        .sign(stranger.privateKey);
    }
    case 'none':
      return `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(claims())}.`;
    case 'hs256': {
      const input = `${b64({ alg: 'HS256', kid: 'as-1', typ: 'at+jwt' })}.${b64(claims())}`;
      const mac = crypto.createHmac('sha256', JSON.stringify(publicJwk)).update(input).digest('base64url');
      return `${input}.${mac}`;
    }
    default:
      return null;
  }
}

// The interaction of an authorization request, done at once: login as
// `user-1`, then consent to every scope and resource the prompt says is
// missing. Each answer is a 303 back to /auth.
async function interact(req, res) {
  try {
    const { prompt, params, grantId, session } = await provider.interactionDetails(req, res);
    let result;
    if (prompt.name === 'login') {
      result = { login: { accountId: 'user-1' } };
    } else {
      const grant = grantId
        ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
      if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
      if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
      result = { consent: { grantId: await grant.save() } };
    }
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
  } catch (err) {
    console.error('interaction', err);
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end(`interaction failed: ${err.message}`);
  }
}

const callback = provider.callback();
server.on('request', async (req, res) => {
  const url = new URL(req.url, issuer);
  if (url.pathname.startsWith('/interaction/')) {
    await interact(req, res);
    return;
  }
  if (url.pathname === '/forge') {
    const body = (await forge(url.searchParams.get('kind'))) ?? '';
    res.writeHead(body ? 200 : 404, {
      'content-type': 'text/plain',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
    return;
  }
  callback(req, res);
});

console.log(JSON.stringify({
  issuer,
  jwks_uri: `${issuer}/jwks`,
  token_endpoint: `${issuer}/token`,
  registration_endpoint: `${issuer}/reg`,
  authorization_endpoint: `${issuer}/auth`,
  introspection_endpoint: `${issuer}/token/introspection`,
  revocation_endpoint: `${issuer}/token/revocation`,
}));
// The tests read that one line and close the pipe: whatever comes later
// (oidc-provider's notices go to console.info, e.g. "default ttl.Grant
// function called" on a first authorization) goes to stderr, never into
// the closed stdout, where it would end this process with EPIPE.
console.log = console.info = console.error;
process.stdout.on('error', () => {});
