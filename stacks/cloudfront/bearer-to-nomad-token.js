// CloudFront Function (runtime cloudfront-js-2.0), viewer request, on both behaviours of the scheduler distribution.
// Origin access control signs the request to the stream's Function URL with SigV4 and so overwrites the viewer's
// Authorization header, and CloudFront drops it from GET and HEAD requests to the (uncached) HTTP API. A viewer that
// sends its token as `Authorization: Bearer <token>` (Nomad's API clients can) would arrive without it; this copies
// the token to X-Nomad-Token first, which the scheduler reads as well.
// A viewer that already sends X-Nomad-Token or X-Scheduler-Token keeps it: those take precedence at the origin too.
// biome-ignore lint/correctness/noUnusedVariables: CloudFront calls the function named handler
async function handler(event) {
  const request = event.request;
  const headers = request.headers;
  if (headers['x-nomad-token'] || headers['x-scheduler-token'] || !headers.authorization) return request;
  const match = /^Bearer\s+(\S.*)$/i.exec(headers.authorization.value);
  if (match) headers['x-nomad-token'] = { value: match[1].trim() };
  return request;
}
