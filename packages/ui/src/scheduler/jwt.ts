/**
 * A JWT's payload, decoded in the browser for the binding-rule tester's dry run. Not verified: no signature, issuer,
 * audience or expiry is checked (a real login checks them all); the claims only go to the dry run.
 */
export function decodeJwtPayload(jwt: string): Record<string, unknown> {
  const parts = jwt.trim().split('.');
  if (parts.length !== 3 || !parts[1])
    throw new Error('A JWT has three dot-separated parts (header.payload.signature)');
  const base64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
  let text: string;
  try {
    const binary = atob(base64.padEnd(base64.length + ((4 - (base64.length % 4)) % 4), '='));
    text = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
  } catch {
    throw new Error('The JWT payload is not base64url-encoded UTF-8');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new Error('The JWT payload is not JSON');
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload))
    throw new Error('The JWT payload is not a JSON object');
  return payload as Record<string, unknown>;
}
