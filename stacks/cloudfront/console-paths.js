// CloudFront Function (runtime cloudfront-js-2.0), viewer request, on the console's behaviours (`/ui`, `/ui/*`).
// The console routes on the client (`/ui/vault/auth/<mount>/oidc/callback`, `/ui/settings/tokens`, ...), so a path
// whose last segment has no extension is the page, `ui/index.html` in the bucket; a file (`app.js`, `config.json`)
// is served as it is. `/ui` itself is redirected to `/ui/`, so the page's relative URLs resolve under `/ui/`.
// Only these behaviours run it: an API path, 404 included, is never rewritten.
// biome-ignore lint/correctness/noUnusedVariables: CloudFront calls the function named handler
async function handler(event) {
  const request = event.request;
  if (request.uri === '/ui') {
    return { statusCode: 301, statusDescription: 'Moved Permanently', headers: { location: { value: '/ui/' } } };
  }
  const last = request.uri.slice(request.uri.lastIndexOf('/') + 1);
  if (last.indexOf('.') === -1) request.uri = '/ui/index.html';
  return request;
}
