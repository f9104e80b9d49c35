/** Structured JSON log lines. Callers pass only non-secret fields: no token, password or key is ever logged. */
export type LogFields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export function jsonLogger(write: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): Logger {
  const emit = (level: string, message: string, fields?: LogFields) =>
    write(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
  return { info: (m, f) => emit('info', m, f), error: (m, f) => emit('error', m, f) };
}

export const silentLogger: Logger = { info() {}, error() {} };
