/** A document HCL v1 refuses, with where (line and column, when known), in hcl's own words. */
export class HclSyntaxError extends Error {
  constructor(
    message: string,
    readonly line = 0,
    readonly column = 0,
  ) {
    super(line > 0 ? `At ${line}:${column}: ${message}` : message);
    this.name = 'HclSyntaxError';
  }
}
