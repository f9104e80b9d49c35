/**
 * `npm run agent -- -data-dir DIR -servers http://127.0.0.1:4646 -client-intro-token JWT`: a Keyhaven client agent on
 * this machine (flags in `config.ts`). Ctrl-C or SIGTERM stops it without deregistering the node, as Nomad's agent.
 */
import { Agent } from './agent.ts';
import { ConfigError, loadConfig, usage } from './config.ts';

let agent: Agent | undefined;
let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`received ${signal}, stopping (the node stays registered)\n`);
  await agent?.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));

const fail = (error: unknown) => {
  process.stderr.write(`keyhaven agent: ${error instanceof Error ? error.message : String(error)}\n`);
  if (error instanceof ConfigError) process.stderr.write(`\n${usage}`);
  process.exit(1);
};

try {
  const config = loadConfig(process.argv.slice(2), process.env);
  if (config === 'help') {
    process.stdout.write(usage);
    process.exit(0);
  }
  agent = new Agent({ config });
  // Not awaited at the top level: a signal may end the process while the agent is still registering.
  agent.start().catch(fail);
} catch (error) {
  fail(error);
}
