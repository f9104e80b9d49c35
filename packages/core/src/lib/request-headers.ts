/** The request headers the services read, by case-insensitive name: a web `Headers` is one, so is a Lambda event's. */
export interface RequestHeaders {
  get(name: string): string | null;
}

/** API Gateway's header map (names already lower-case) as RequestHeaders, without building a web `Headers`. */
export function lowerCaseHeaders(headers: Record<string, string | undefined> | undefined): RequestHeaders {
  return { get: (name) => headers?.[name.toLowerCase()] ?? null };
}
