/** @deprecated import from `lib/errors.ts`: the one home of the domain's errors (issue 16 moves every caller). */
export {
  badRequest,
  conflict,
  DomainError as ApiError,
  DomainError,
  notFound,
  permissionDenied,
  tooLarge,
  unavailable,
  unsupported,
  upstreamFailure,
} from '../../lib/errors.ts';
