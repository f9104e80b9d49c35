/** An error a caller caused or may see: rendered as `{"errors":[message]}` with its status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const permissionDenied = (message = 'permission denied') => new ApiError(403, message);
export const notFound = (message = '') => new ApiError(404, message);
