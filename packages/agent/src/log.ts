/** Where the agent writes what it does: a line at a time (stdout under `npm run agent`). */
export type Log = (line: string) => void;

export const stdoutLog: Log = (line) => {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`);
};
