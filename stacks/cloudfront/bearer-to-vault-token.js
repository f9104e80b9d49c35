// CloudFront Function (runtime cloudfront-js-2.0), viewer request, on the secrets service's API behaviour.
// CloudFront drops the viewer's Authorization header from GET and HEAD requests it does not cache on (and the API is
// never cached), so a client that sends its token as `Authorization: Bearer <token>` (Vault's API accepts it) would
// arrive without a token. This copies the token to X-Vault-Token first, which the service reads as well.
// A viewer that already sends X-Vault-Token or X-Secrets-Token keeps it: those take precedence at the origin too.
// biome-ignore lint/correctness/noUnusedVariables: CloudFront calls the function named handler
async function handler(event) {
  const request = event.request;
  const headers = request.headers;
  if (headers['x-vault-token'] || headers['x-secrets-token'] || !headers.authorization) return request;
  const match = /^Bearer\s+(\S.*)$/i.exec(headers.authorization.value);
  if (match) headers['x-vault-token'] = { value: match[1].trim() };
  return request;
}
