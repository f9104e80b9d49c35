/**
 * The slow cryptography one job parse may spend: `bcrypt` rounds and RSA private-key operations cost milliseconds
 * each, not the microseconds the step budget (`hcl-values.ts`) counts, so they draw on an allowance of their own,
 * one per parse. Units: one bcrypt cost-4 hash (16 key-expansion rounds) is 1 unit, each cost step doubles it (cost
 * 10, Nomad's default, is 64 units, about 100 ms of bcryptjs on this project's 2-core machine under load); an RSA
 * decryption is 1 unit to read the key, then 2 × (modulus bits / 4096)³ units rounded up (a 2048-bit key 1 more, a
 * 4096-bit key 2, a 16,384-bit key, the largest read, 128).
 *
 * The parse is synchronous from the moment its variables are resolved to its end (`parse-job.ts`), so the allowance
 * of the parse in progress is held here for that span: no other request's evaluation can run inside it.
 */
import { HclLimitError } from './hcl-values.ts';

/** Work units one job parse may spend on bcrypt and rsadecrypt together: eight cost-10 hashes, or one cost-13. */
export const maxCryptoWork = 512;

class CryptoAllowance {
  remaining = maxCryptoWork;
  /** Keys already read and checked in this parse, by their DER: forgotten with the parse. */
  readonly keys = new Map<string, unknown>();
}

let current: CryptoAllowance | undefined;

/** Runs a whole (synchronous) parse with one fresh allowance. */
export function withCryptoAllowance<T>(run: () => T): T {
  const previous = current;
  current = new CryptoAllowance();
  try {
    return run();
  } finally {
    current = previous;
  }
}

/**
 * What `read` answers for this DER, read once per parse (a job file that decrypts many values with one key reads and
 * checks it once). Outside a parse nothing is kept.
 */
export function readOncePerParse<T>(der: Buffer, read: () => T): T {
  if (!current) return read();
  const id = der.toString('base64');
  if (!current.keys.has(id)) current.keys.set(id, read());
  return current.keys.get(id) as T;
}

/**
 * Spends `units` of the parse's allowance before the work is done, or refuses with a 400 that `try`/`can` cannot
 * turn into a value. Outside a parse (an expression evaluated on its own) each call has a full allowance of its own.
 */
export function spendCryptoWork(units: number, what: string): void {
  const allowance = current ?? new CryptoAllowance();
  if (units > allowance.remaining)
    throw new HclLimitError(
      `${what} would take the job file past its cryptography allowance (${maxCryptoWork} units a parse: eight bcrypt hashes of cost 10, or RSA decryptions worth as much; docs/security.md)`,
    );
  allowance.remaining -= units;
}
