/**
 * What went wrong, in the domain's terms. The code that finds a problem says what kind it is; the secrets
 * framework and the scheduler's route wrapper turn the kind into an HTTP status (`DomainError.status`), so no domain
 * module speaks HTTP.
 */
export type ErrorKind =
  /** The request is malformed or asks for something the rules refuse (400). */
  | 'invalid'
  /** The caller's credential (a login's JWT) is not valid (401). */
  | 'unauthenticated'
  /** The caller may not do this (403). */
  | 'denied'
  /** Nothing is there (404). */
  | 'not-found'
  /** The path exists but not with this operation (405). */
  | 'unsupported'
  /** The target changed or is in a state that refuses this now (409). */
  | 'conflict'
  /** The request or the data is too large (413). */
  | 'too-large'
  /** The body's declared media type is not one the service reads (415). */
  | 'unsupported-media'
  /** A system we depend on (directory, cloud, mesh) failed or refused (502). */
  | 'upstream'
  /** We cannot serve this now: sealed, an audit device down (503). */
  | 'unavailable';

const statuses: Record<ErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  denied: 403,
  'not-found': 404,
  unsupported: 405,
  conflict: 409,
  'too-large': 413,
  'unsupported-media': 415,
  upstream: 502,
  unavailable: 503,
};

/** An error a caller caused or may see: its message is shown to the caller. */
export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
  ) {
    super(message);
  }

  /** The HTTP status this kind of error is answered with. */
  get status(): number {
    return statuses[this.kind];
  }
}

export const badRequest = (message: string) => new DomainError('invalid', message);
export const unauthenticated = (message: string) => new DomainError('unauthenticated', message);
export const permissionDenied = (message = 'permission denied') => new DomainError('denied', message);
export const notFound = (message = '') => new DomainError('not-found', message);
export const unsupported = (message: string) => new DomainError('unsupported', message);
export const conflict = (message: string) => new DomainError('conflict', message);
export const tooLarge = (message: string) => new DomainError('too-large', message);
export const unsupportedMedia = (message: string) => new DomainError('unsupported-media', message);
export const upstreamFailure = (message: string) => new DomainError('upstream', message);
export const unavailable = (message: string) => new DomainError('unavailable', message);
