/**
 * Nomad's omitted-empty JSON fields. Nomad's HTTP API and event stream encode its `structs` with go-msgpack's JSON
 * handle (`structs.JsonHandleWithExtensions`), which honours a struct's `_struct bool codec:",omitempty"` (every field
 * of `Allocation`, `Evaluation`, `NetworkResource`, `Port`, `AllocatedPortMapping`) and a field's own
 * `json:",omitempty"`. Its empty rule (`codec/helper.go` `isEmptyValue`, `RecursiveEmptyCheck` off): `""`, `0`,
 * `false`, a nil pointer, a nil or empty slice or map, the zero `time.Time`, and a comparable struct equal to its zero
 * value; a non-nil pointer is never empty, whatever it points at. Here a pointer or a zero time is `null`, a struct
 * given in `structs` is empty when every field is `null`; a JSON object that is a Go map is empty with no keys.
 */

type Json = Record<string, unknown>;

/** Whether the codec leaves `value` out (`structs`: the fields that are Go structs of pointers, zero when all null). */
function isEmpty(value: unknown, struct: boolean): boolean {
  if (value === null || value === undefined || value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') {
    const fields = Object.values(value as Json);
    return struct ? fields.every((field) => field === null || field === undefined) : fields.length === 0;
  }
  return false;
}

/** `record` without the fields the codec omits; `structs` names its struct-valued fields (the rest are maps). */
export function omitEmpty<T extends object>(record: T, structs: readonly string[] = []): Partial<T> {
  const out: Json = {};
  for (const [key, value] of Object.entries(record)) {
    if (!isEmpty(value, structs.includes(key))) out[key] = value;
  }
  return out as Partial<T>;
}

/** Nomad's `NetworkResource` (`_struct` omitempty), its `ReservedPorts`/`DynamicPorts` `Port`s too. */
export function networkJson(network: unknown): unknown {
  if (!network || typeof network !== 'object') return network;
  const shaped = omitEmpty(network as Json) as Json;
  for (const key of ['ReservedPorts', 'DynamicPorts'])
    if (Array.isArray(shaped[key])) shaped[key] = (shaped[key] as Json[]).map((port) => omitEmpty(port));
  return shaped;
}

/** A list of `NetworkResource`s shaped, `null` kept (the enclosing struct decides whether it is left out). */
export const networksJson = (networks: unknown): unknown =>
  Array.isArray(networks) ? networks.map(networkJson) : networks;
